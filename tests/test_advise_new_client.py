"""A new producer client is its rules and one registration: this module declares a client of its own,
registers it once, and it runs through the replay, the configuration names and the report with no
other file naming it."""
from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

import kcodec
from kcodec.advise.aggregate import aggregate_rows
from kcodec.advise.cost import Prices, TopicEconomics
from kcodec.advise.grid import Setting
from kcodec.advise.recommend import Rule, advise_topic
from kcodec.advise.replay import CLIENTS, ClientRules
from kcodec.advise.report import summary_text, write_reports
from kcodec.advise.task import metrics_schema

#: a client that fills batch.size with uncompressed bytes, holds at most 7 records a batch, and names
#: its level ``toy.<codec>.compression.level``
TOY = ClientRules("toy-producer", "uncompressed", 7, False, 65536, 5, "toy.{codec}.compression.level",
                  summary="uncompressed fill, toy.<codec>.compression.level", title="Toy")


@pytest.fixture
def toy(monkeypatch):
    """The one registration: the registry's entry, for this test only."""
    monkeypatch.setitem(CLIENTS, TOY.name, TOY)
    return TOY


def _data(n: int = 70) -> bytes:
    """Today's batches: ``n`` keyed JSON records a millisecond apart, in batches of 35."""
    import pyarrow as pa

    values = [b'{"user":%d,"page":"/product/%d","event":"view"}' % (i % 9, i % 13) for i in range(n)]
    ts = (1_700_000_000_000 + np.arange(n)).astype(np.int64) * 1000
    table = pa.table({"key": pa.array([b"k%d" % (i % 5) for i in range(n)], pa.binary()),
                      "value": pa.array(values, pa.binary()),
                      "timestamp": pa.array(ts, pa.timestamp("us", tz="UTC"))})
    return b"".join(bytes(b) for a in range(0, n, 35)
                    for b in kcodec.from_arrow(table.slice(a, 35), compression="none", max_batch_bytes=2 ** 31 - 1,
                                               base_offset=a))


def test_the_new_client_is_a_choice_of_the_command_line(toy):
    from kcodec.advise.cli import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert parser.parse_args(["advise", "--producer-client", "toy-producer"]).producer_client == "toy-producer"
    text = parser._subparsers._group_actions[0].choices["advise"].format_help()
    assert "toy-producer (uncompressed fill, toy.<codec>.compression.level)" in " ".join(text.split())


def test_the_new_client_runs_through_the_replay_and_the_report(toy, tmp_path):
    pytest.importorskip("matplotlib")  # the report draws its charts (the spark extra; the core suite lacks it)
    import pyarrow as pa

    from kcodec.advise.task import measure_chunk

    grid = [Setting("zstd", 19, 1 << 20, 100), Setting("none", None, 1 << 20, 100)]
    rows = measure_chunk("orders", 0, 0, _data(), grid, client="toy-producer", cpu_cost="model")
    table = pa.Table.from_pylist(rows, schema=metrics_schema())
    by_setting = {r["setting"]: r for r in rows}
    # its batches hold at most 7 records: 70 records in 10 batches under either setting, not 1
    assert by_setting["today"]["client"] == "toy-producer"
    assert by_setting[grid[0].label]["batches"] == by_setting[grid[1].label]["batches"] == 10
    agg = aggregate_rows(table)["orders"]
    assert agg.profile.replay.client == "toy-producer"
    a = advise_topic("orders", agg, None, TopicEconomics(bytes_per_day=1e11), Prices(),
                     Rule(min_compress_mbps=0, min_read_mbps=0, min_saving=0), choose=grid[0])
    assert a.client is TOY
    assert a.config() == {"compression.type": "zstd", "toy.zstd.compression.level": "19", "batch.size": "1048576",
                          "linger.ms": "100"}
    text = summary_text([a])
    assert "set        compression.type=zstd toy.zstd.compression.level=19 batch.size=1048576 linger.ms=100" in text
    assert "replay     toy-producer" in text
    assert "pre-" not in text  # every version of it sets a level
    assert "Toy" not in text  # its batches at linger.ms=0 are not load-bound: no note on them
    paths = write_reports(tmp_path, [a], {"input": "test"})
    written = json.loads(paths["json"].read_text())
    assert written["topics"][0]["config"]["toy.zstd.compression.level"] == "19"
