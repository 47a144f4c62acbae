"""``--emit``'s files without Spark: which clients get one, the kafka-configs.sh commands, the headers
(the real producers taking them: tests/test_advise_emit_check.py)."""
from __future__ import annotations

from types import SimpleNamespace

from kcodec.advise.emit import emit_configs
from kcodec.advise.grid import Setting
from kcodec.advise.replay.registry import CLIENTS, DEFAULT_CLIENT


def _advice(topic: str, setting: Setting):
    def measured(total: float, records: int, batches: int):
        return SimpleNamespace(setting=setting, cost=SimpleNamespace(total=total), ratio=4.0, stored_per_day=1e9,
                               records_per_batch=records / batches)
    today = measured(100.0, 1000, 100)
    best = measured(60.0, 1000, 10)
    return SimpleNamespace(topic=topic, best=best, today=today, priced=True, saving=40.0, client=DEFAULT_CLIENT,
                           assumptions=[], volume_source="")


def test_each_client_that_can_set_it_gets_a_file_and_topics_that_rebuild_get_a_command(tmp_path):
    zstd19 = Setting("zstd", 19, 65536, 20)
    advice = [_advice("orders", zstd19), _advice("payments", zstd19), _advice("clicks", zstd19)]
    cluster = {"orders": {"compression.type": "gzip"}, "payments": {"compression.type": "producer"}}
    written = emit_configs(tmp_path, advice, None, cluster, (), "kafka:9092", "/etc/kafka/client.properties")
    names = sorted(p.name for p in written)
    # one group per topic without an estate; the clients that set levels get files, the others a line
    setters = sorted(c.name for c in CLIENTS.values() if c.sets_levels)
    assert sorted(n for n in names if n.startswith("01-")) == sorted(
        [f"01-zstd-19-64KiB-20ms.{c}.{CLIENTS[c].config_suffix}" for c in setters]
        + ["01-zstd-19-64KiB-20ms.kafka-configs.sh"])
    java = (tmp_path / "01-zstd-19-64KiB-20ms.java.properties").read_text().splitlines()
    assert [x for x in java if not x.startswith("#")] == ["compression.type=zstd", "compression.zstd.level=19",
                                                           "batch.size=65536", "linger.ms=20"]
    cannot = [c.display_name for c in CLIENTS.values() if not c.sets_levels]
    assert f"# no file for {', '.join(cannot)}: the level 19 cannot be set there" in java
    assert "# topics: orders" in java and "# saves $40.00/month on the 1 priced topic(s) ($100.00 -> $60.00" in java[3]
    commands = (tmp_path / "01-zstd-19-64KiB-20ms.kafka-configs.sh").read_text().splitlines()
    assert commands[0] == "#!/bin/sh"
    assert [x for x in commands if not x.startswith("#")] == [
        "kafka-configs.sh --bootstrap-server kafka:9092 --command-config /etc/kafka/client.properties --alter "
        "--entity-type topics --entity-name orders --add-config compression.type=producer"]
    # a topic already at producer needs nothing; one whose setting was not read gets the command commented
    assert not (tmp_path / "02-zstd-19-64KiB-20ms.kafka-configs.sh").exists()
    clicks = (tmp_path / "03-zstd-19-64KiB-20ms.kafka-configs.sh").read_text().splitlines()
    assert [x for x in clicks if not x.startswith("#")] == []
    assert ("# kafka-configs.sh --bootstrap-server kafka:9092 --command-config /etc/kafka/client.properties --alter "
            "--entity-type topics --entity-name clicks --add-config compression.type=producer") in clicks
