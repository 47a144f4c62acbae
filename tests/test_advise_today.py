"""Today's profile of a topic, summed over its chunks' metrics rows on the driver."""
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from kcodec.advise.profile import CODEC_NAMES, HIST_BINS
from kcodec.advise.task import metrics_schema
from kcodec.advise.today import median_element, percentile, today_profiles
from kcodec.advise.topic_profile import Spread, TopicProfile

OPERATOR = Path(__file__).resolve().parent.parent / "docs" / "operator.md"


def _row(topic, partition, chunk, **kw):
    row = {f.name: None for f in metrics_schema()}
    row.update(topic=topic, partition=partition, chunk=chunk, setting="today", min_ts=0, max_ts=0, stored_bytes=0,
               batches=1, log_append_batches=0, codec_bytes=[0] * len(CODEC_NAMES), magic_batches=[0, 0, 0],
               record_size_hist=[0] * HIST_BINS, batch_records=[], batch_bytes=[], client="java",
               sender_delay_ms=0.0, sender_calibrated=True, replay_batches=1, producer_ids=0, producers_replayed=1)
    row.update(kw)
    return row


def _table(rows):
    return pa.Table.from_pylist(rows, schema=metrics_schema())


def test_percentiles_interpolate_between_ranks_and_the_median_element_is_a_value():
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([4, 1, 3, 2], 0.1) == pytest.approx(1.3)  # position 0.3 between 1 and 2
    assert percentile([7], 0.9) == 7.0
    assert percentile([1, 10], 0.9) == pytest.approx(9.1)
    # the sender delay of a topic is one chunk's calibrated delay: the lower middle, never an average
    assert median_element([0.3, 0.1, 0.2, 0.4]) == 0.2
    assert median_element([0.5]) == 0.5
    assert median_element([0.9, 0.1, 0.5]) == 0.5


def test_a_topics_chunks_are_summed_in_partition_and_chunk_order():
    hist = [0] * HIST_BINS
    hist[2] = 5
    codecs = [0] * len(CODEC_NAMES)
    codecs[CODEC_NAMES.index("lz4")] = 300
    rows = [
        # listed out of order: the result must not depend on the order the tasks returned them in
        _row("b", 1, 0, min_ts=2_000, max_ts=6_000, stored_bytes=400, batches=4, log_append_batches=1,
             codec_bytes=codecs, magic_batches=[0, 1, 3], record_size_hist=hist, batch_records=[1, 2],
             batch_bytes=[100, 300], sender_delay_ms=0.4, sender_calibrated=False, replay_batches=5,
             producer_ids=2, producers_replayed=2),
        _row("b", 0, 0, min_ts=1_000, max_ts=3_000, stored_bytes=100, batches=2, codec_bytes=codecs,
             magic_batches=[0, 0, 2], record_size_hist=hist, batch_records=[3, 4], batch_bytes=[40, 60],
             sender_delay_ms=0.2, replay_batches=1, producer_ids=1),
        _row("b", 0, 1, min_ts=5_000, max_ts=5_000, stored_bytes=50, batches=1, batch_records=[10],
             batch_bytes=[50], sender_delay_ms=0.3, client="librdkafka", replay_batches=2),
        _row("a", 0, 0, min_ts=10, max_ts=20, stored_bytes=10, batch_records=[1], batch_bytes=[10]),
    ]
    got = today_profiles(_table(rows))
    assert sorted(got) == ["a", "b"]
    b = got["b"]
    assert (b.min_ts, b.max_ts, b.log_append_batches) == (1_000, 6_000, 1)
    # each chunk's bytes per millisecond of its own span, averaged; a chunk of one millisecond has none
    assert b.partition_rate == (400 / 4_000 + 100 / 2_000) / 2
    assert b.codec_bytes["lz4"] == 600 and b.codec_bytes["none"] == 0
    assert b.magic_batches == {0: 0, 1: 1, 2: 5}
    assert b.record_size_hist[2] == 10 and sum(b.record_size_hist) == 10
    assert b.batch_records == Spread(p10=percentile([1, 2, 3, 4, 10], 0.1), p50=3.0,
                                     p90=percentile([1, 2, 3, 4, 10], 0.9), mean=4.0)
    assert b.batch_bytes.p50 == 60.0 and b.batch_bytes.mean == 110.0
    r = b.replay
    assert r.clients == ("java", "librdkafka") and r.client == "java"  # mixed clients: Java's rules
    assert r.sender_delay_ms == 0.3 and r.calibrated_share == pytest.approx(2 / 3)
    assert r.calibration_error == (4 + 2 + 1) / (5 + 1 + 2) - 1.0
    assert (r.producer_ids, r.producers_replayed) == (2, 2)
    assert got["a"].replay.client == "java" and got["a"].partition_rate == 1.0
    assert not r.recognised and got["a"].replay.recognised  # two clients' chunks: neither is the topic's
    unknown = today_profiles(_table([_row("c", 0, 0, client="java", client_recognised=False)]))
    assert not unknown["c"].replay.recognised  # Java's rules, but no client's framing told them
    # the same rows in another order give the same figures to the last bit
    assert today_profiles(_table(rows[::-1])) == got


def test_a_topic_whose_chunks_record_no_batches_has_no_batch_spread():
    got = today_profiles(_table([_row("t", 0, 0, batch_records=[], batch_bytes=[], max_ts=0)]))
    assert got["t"].batch_records is None and got["t"].batch_bytes is None
    assert got["t"].partition_rate is None
    assert got["t"].replay.clients == ("java",)
    # results.json leaves out a spread that was not measured
    assert list(got["t"].doc()) == ["min_ts", "max_ts", "log_append_batches", "partition_rate", "codec_bytes",
                                    "magic_batches", "record_size_hist", "replay"]


def test_the_profiles_json_form_has_exactly_the_documented_fields():
    """``results.json``'s ``profile``: its fields in this order, the spreads and the replay as objects, the
    message formats keyed by their magic byte; the same JSON whether or not the replay is one a client framed."""
    hist = [0] * HIST_BINS
    hist[3] = 7
    codecs = [0] * len(CODEC_NAMES)
    codecs[CODEC_NAMES.index("zstd")] = 900
    rows = [_row("t", 0, 0, min_ts=1_000, max_ts=3_000, stored_bytes=900, batches=3, log_append_batches=1,
                 codec_bytes=codecs, magic_batches=[0, 1, 2], record_size_hist=hist, batch_records=[2, 2, 3],
                 batch_bytes=[300, 300, 300], client="sarama", sender_delay_ms=1.5, sender_calibrated=True,
                 replay_batches=4, producer_ids=2, producers_replayed=2)]
    doc = json.loads(json.dumps(today_profiles(_table(rows))["t"].doc()))
    assert list(doc.items()) == [
        ("min_ts", 1_000), ("max_ts", 3_000), ("log_append_batches", 1), ("partition_rate", 900 / 2_000),
        ("codec_bytes", {"none": 0, "gzip": 0, "snappy": 0, "lz4": 0, "zstd": 900, "other": 0}),
        ("magic_batches", {"0": 0, "1": 1, "2": 2}), ("record_size_hist", hist),
        ("batch_records", {"p10": 2.0, "p50": 2.0, "p90": percentile([2, 2, 3], 0.9), "mean": 7 / 3}),
        ("batch_bytes", {"p10": 300.0, "p50": 300.0, "p90": 300.0, "mean": 300.0}),
        ("replay", {"client": "sarama", "clients": ["sarama"], "recognised": True, "sender_delay_ms": 1.5,
                    "calibrated_share": 1.0, "calibration_error": 3 / 4 - 1.0, "producer_ids": 2,
                    "producers_replayed": 2})]
    assert [list(doc[k]) for k in ("batch_records", "replay")] == [
        ["p10", "p50", "p90", "mean"],
        ["client", "clients", "recognised", "sender_delay_ms", "calibrated_share", "calibration_error",
         "producer_ids", "producers_replayed"]]
    # a profile built by hand without a replay has none in its JSON either
    assert "replay" not in TopicProfile({"none": 1}).doc()
    # docs/operator.md names each of them, the profile's own in this order
    if OPERATOR.is_file():
        paragraph = next(p for p in OPERATOR.read_text(encoding="utf-8").split("\n\n")
                         if p.startswith("`results.json` gives each topic's `profile`"))
        named = re.findall(r"`(\w+)`", paragraph)[1:]
        nested = {*doc["batch_records"], *doc["replay"]}
        assert [n for n in named if n not in nested] == list(doc)
        assert sorted(n for n in named if n in nested) == sorted(nested)
