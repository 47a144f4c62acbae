"""``kcodec.advise.cost``: the bill, computed by hand from literals, with every factor of the model
set to a different value that is not 1 so that swapping a multiply for a divide changes the answer."""
from __future__ import annotations

import json

import pytest

from kcodec.advise.cost import (
    DAYS_PER_MONTH,
    ECONOMICS_FIELDS,
    GB,
    PRICE_FIELDS,
    PRICE_LIST,
    MonthlyCost,
    Prices,
    TopicEconomics,
    load_prices,
    monthly_cost,
    value_problem,
)
from kcodec.errors import KcodecError

PRICES = Prices(block_gb_month=0.1, object_gb_month=0.03, cross_zone_gb=0.05, vcpu_hour=0.07)
TOPIC = TopicEconomics(retention_days=5, replication_factor=4, consumer_groups=2.5,
                       producer_cross_zone=0.4, replication_cross_zone=0.75, consumer_cross_zone=0.3)
STORED = 3 * 1073741824   # 3 GB a day, a GB being 2**30 bytes as AWS bills it
RAW = 2_000_000_000       # 2000 MB a day before compression


def test_units_are_pinned_by_literals():
    assert GB == 1073741824
    assert DAYS_PER_MONTH == 30
    assert "us-east-1" in PRICE_LIST and "2024" in PRICE_LIST


def test_default_prices_are_the_published_list_prices():
    # aws.amazon.com, us-east-1, 2024: EBS gp3 $0.08/GB-month, S3 Standard $0.023/GB-month,
    # inter-AZ $0.01/GB each way, m5.large $0.096/hour for 2 vCPUs
    # (through load_prices, as advise gets them without a file or flags)
    p, t, _topics = load_prices(None, {})
    assert (p.block_gb_month, p.object_gb_month, p.cross_zone_gb, p.vcpu_hour) == (0.08, 0.023, 0.02, 0.048)
    assert (p.ingress_gb, p.egress_gb, p.replication_billed, p.storage_per_replica) == (0.0, 0.0, True, True)
    assert (t.retention_days, t.replication_factor, t.consumer_groups) == (7.0, 3, 1.0)
    assert (t.producer_cross_zone, t.replication_cross_zone, t.consumer_cross_zone) == (2 / 3, 1.0, 2 / 3)
    assert t.local_retention_days is None and t.bytes_per_day is None and t.max_retained_bytes is None


def test_every_factor_of_the_bill():
    c = monthly_cost(STORED, RAW, 40.0, 120.0, PRICES, TOPIC)
    assert c.storage == pytest.approx(3 * 5 * 4 * 0.1)                            # 6.00
    assert c.network == pytest.approx(3 * 30 * (0.4 + 3 * 0.75 + 2.5 * 0.3) * 0.05)  # 15.30
    # 60,000 MB a month: compressed once at 40 MB/s, read by 2.5 groups at 120 MB/s
    assert c.cpu == pytest.approx((1500 + 500 * 2.5) / 3600 * 0.07)
    assert c.total == pytest.approx(6.0 + 15.3 + 2750 / 3600 * 0.07)
    assert c.total == c.storage + c.network + c.cpu


def test_broker_recompression_costs_a_second_compress_and_a_read():
    c = monthly_cost(STORED, RAW, 40.0, 120.0, PRICES, TOPIC, broker_recompresses=True)
    assert c.cpu == pytest.approx((1500 * 2 + 500 * (2.5 + 1)) / 3600 * 0.07)
    assert c.storage == pytest.approx(6.0) and c.network == pytest.approx(15.3)


def test_cpu_left_out_when_speeds_are_unknown():
    assert monthly_cost(STORED, RAW, None, 120.0, PRICES, TOPIC).cpu == pytest.approx(1250 / 3600 * 0.07)
    assert monthly_cost(STORED, RAW, 40.0, None, PRICES, TOPIC).cpu == pytest.approx(1500 / 3600 * 0.07)
    assert monthly_cost(STORED, RAW, None, None, PRICES, TOPIC).cpu == 0


def test_tiered_storage_keeps_local_days_on_block_storage_and_the_rest_once_on_object_storage():
    tiered = TopicEconomics(retention_days=5, replication_factor=4, local_retention_days=2)
    c = monthly_cost(STORED, RAW, None, None, PRICES, tiered)
    assert c.storage == pytest.approx(3 * 2 * 4 * 0.1 + 3 * (5 - 2) * 0.03)   # 2.40 + 0.27
    # local retention as long as, or longer than, retention: everything stays on the brokers
    for local in (5, 9):
        c = monthly_cost(STORED, RAW, None, None, PRICES,
                         TopicEconomics(retention_days=5, replication_factor=4, local_retention_days=local))
        assert c.storage == pytest.approx(3 * 5 * 4 * 0.1)


def test_tiered_storage_under_retention_bytes():
    # 3 GB a day for 5 days, 2 of them local: retention.bytes caps what is kept, the local part first
    def storage(cap_gb):
        econ = TopicEconomics(retention_days=5, replication_factor=4, local_retention_days=2,
                              max_retained_bytes=cap_gb * GB)
        return monthly_cost(STORED, RAW, None, None, PRICES, econ).storage
    assert storage(9) == pytest.approx(3 * 2 * 4 * 0.1 + (9 - 6) * 0.03)   # 2.40 + 0.09
    assert storage(4.5) == pytest.approx(4.5 * 4 * 0.1)                     # all of it local: 1.80


def test_monthly_cost_fields():
    assert MonthlyCost(1.5, 2.25, 4.0).total == 7.75


def test_prices_defaults_without_a_file():
    prices, defaults, topics = load_prices(None, {"vcpu_hour": None, "retention_days": None})
    assert prices == Prices() and defaults == TopicEconomics() and topics == {}


def test_flags_win_over_the_file_and_topics_inherit_both(tmp_path):
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"prices": {"block_gb_month": 0.1, "vcpu_hour": 0.5, "cross_zone_gb": 0},
                             "defaults": {"retention_days": 3, "consumer_groups": 2},
                             "topics": {"audit": {"retention_days": 365}, "plain": None}}))
    prices, defaults, topics = load_prices(str(f), {"vcpu_hour": 0.25, "consumer_groups": 4,
                                                    "object_gb_month": None})
    assert prices == Prices(block_gb_month=0.1, vcpu_hour=0.25, cross_zone_gb=0)
    assert defaults == TopicEconomics(retention_days=3, consumer_groups=4)
    assert topics == {"audit": TopicEconomics(retention_days=365, consumer_groups=4),
                      "plain": TopicEconomics(retention_days=3, consumer_groups=4)}


def test_null_topics_and_null_fields(tmp_path):
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"defaults": {"local_retention_days": None}, "topics": None}))
    prices, defaults, topics = load_prices(str(f), {})
    assert prices == Prices() and defaults == TopicEconomics() and topics == {}


@pytest.mark.parametrize("doc, message", [
    (b"{", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[]", "expected an object with prices, defaults and topics"),
    (b'{"price": {}}', "expected an object with prices, defaults and topics"),
    (b'{"prices": []}', "prices: expected an object"),
    (b'{"defaults": 3}', "defaults: expected an object"),
    (b'{"topics": {"t": [1]}}', "topic t: expected an object"),
    (b'{"topics": {"t": 5}}', "topic t: expected an object"),
    (b'{"topics": [1]}', "topics: expected an object"),
    (b'{"prices": {"block_gb": 1, "cpu": 2}}',
     "prices: unknown field\\(s\\) block_gb, cpu; known: block_gb_month, cross_zone_gb, egress_gb, ingress_gb, "
     "object_gb_month, vcpu_hour"),
    (b'{"prices": {"vcpu_hour": -0.5}}', "prices: vcpu_hour must be a non-negative number, not -0.5"),
    (b'{"defaults": {"replication_factor": true}}',
     "defaults: replication_factor must be a non-negative number, not True"),
    (b'{"topics": {"t": {"retention_days": "7"}}}',
     "topic t: retention_days must be a non-negative number, not '7'"),
    (b'{"defaults": {"producer_cross_zone": 1.5}}',
     "defaults: producer_cross_zone is a share of the traffic: between 0 and 1, not 1.5"),
    (b'{"topics": {"t": {"replication_factor": 2.5}}}',
     "topic t: replication_factor must be a whole number, 1 or more, not 2.5"),
    (b'{"defaults": {"retention_days": 0}}', "defaults: retention_days must be more than 0, not 0"),
])
def test_bad_prices_files_name_the_file_and_the_field(tmp_path, doc, message):
    f = tmp_path / "p.json"
    f.write_bytes(doc)
    with pytest.raises(KcodecError, match=f"^--prices {f}: {message}"):
        load_prices(str(f), {})


def test_a_missing_or_directory_prices_file(tmp_path):
    with pytest.raises(KcodecError, match=f"^--prices {tmp_path}/none.json: no such file$"):
        load_prices(str(tmp_path / "none.json"), {})
    with pytest.raises(KcodecError, match="no such file"):
        load_prices(str(tmp_path), {})


def test_zero_is_a_price(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"prices": {"object_gb_month": 0, "cross_zone_gb": 0.0}}))
    assert load_prices(str(f), {})[0] == Prices(object_gb_month=0, cross_zone_gb=0.0)


def test_prices_and_economics_are_values():
    # load_prices hands one TopicEconomics to every topic without its own: none may change it in place
    import dataclasses
    for value in load_prices(None, {})[:2]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.retention_days = 1.0
        assert hash(value) == hash(type(value)())


def test_the_fields_a_file_or_flag_may_set():
    # the billing rules (replication_billed, storage_per_replica) come with a platform, never from a file
    assert PRICE_FIELDS == {"block_gb_month", "object_gb_month", "cross_zone_gb", "vcpu_hour", "ingress_gb",
                            "egress_gb"}
    assert ECONOMICS_FIELDS == {"retention_days", "replication_factor", "consumer_groups", "producer_cross_zone",
                                "replication_cross_zone", "consumer_cross_zone", "local_retention_days",
                                "max_retained_bytes", "bytes_per_day"}


NEGATIVE = "must be a non-negative number"
SHARE = "is a share of the traffic: between 0 and 1"
WHOLE = "must be a whole number, 1 or more"
POSITIVE = "must be more than 0"


@pytest.mark.parametrize("name, value, problem", [
    ("vcpu_hour", 0, None), ("vcpu_hour", 1e9, None), ("vcpu_hour", None, None),
    ("vcpu_hour", -1e-9, NEGATIVE), ("vcpu_hour", -1, NEGATIVE), ("vcpu_hour", float("inf"), NEGATIVE),
    ("vcpu_hour", float("nan"), NEGATIVE),
    ("producer_cross_zone", 0, None), ("producer_cross_zone", 1, None), ("producer_cross_zone", 1.0001, SHARE),
    ("replication_cross_zone", 2, SHARE), ("consumer_cross_zone", 1.5, SHARE), ("consumer_cross_zone", -0.5, NEGATIVE),
    ("consumer_groups", 1.5, None),   # not a share: several groups read
    ("replication_factor", 1, None), ("replication_factor", 3.0, None), ("replication_factor", 0.999, WHOLE),
    ("replication_factor", 0, WHOLE), ("replication_factor", 2.5, WHOLE),
    ("retention_days", 0, POSITIVE), ("retention_days", 0.01, None), ("bytes_per_day", 0, POSITIVE),
    ("max_retained_bytes", 0, POSITIVE), ("max_retained_bytes", 1, None), ("local_retention_days", 0, None),
])
def test_value_problem_at_each_bound(name, value, problem):
    assert value_problem(name, value) == problem


def test_star_import_gives_the_public_names():
    names: dict = {}
    exec("from kcodec.advise.cost import *", names)
    assert sorted(n for n in names if n != "__builtins__") == sorted([
        "Prices", "TopicEconomics", "MonthlyCost", "monthly_cost", "recompress_cpu", "load_prices", "read_prices_file",
        "GB",
        "PRICE_LIST", "PRICE_FIELDS", "ECONOMICS_FIELDS", "value_problem", "DAYS_PER_MONTH"])
    assert names["value_problem"]("consumer_cross_zone", 2) == "is a share of the traffic: between 0 and 1"
