"""``kcodec.advise.platforms`` and ``assumptions``: each platform's bill computed by hand, and every number
the bill rests on named with its source in the terminal, the HTML and results.json."""
from __future__ import annotations

import json

import pytest

from kcodec.advise.assumptions import CLUSTER, DEFAULT, FLAGS, MEASURED, PRICES_FILE
from kcodec.advise.cost import DAYS_PER_MONTH, GB, Prices, TopicEconomics, monthly_cost
from kcodec.advise.inputs.cluster.settings import TopicSettings
from kcodec.advise.options import Options, check_options
from kcodec.advise.platforms import PLATFORMS, platform
from kcodec.advise.topic_config import price_topic
from kcodec.errors import KcodecError
from kcodec.escape import html_text

STORED = 4 * GB           # 4 GB a day as the brokers store it
TOPIC = TopicEconomics(retention_days=5, replication_factor=3, consumer_groups=2, producer_cross_zone=0.5,
                       replication_cross_zone=0.75, consumer_cross_zone=0.25)


def test_the_profiles_and_their_list_prices():
    assert list(PLATFORMS) == ["ec2", "msk", "confluent-cloud"]
    assert PLATFORMS["ec2"].prices == Prices()
    msk = PLATFORMS["msk"].prices
    assert (msk.block_gb_month, msk.cross_zone_gb, msk.replication_billed, msk.storage_per_replica) == \
        (0.10, 0.02, False, True)
    cc = PLATFORMS["confluent-cloud"].prices
    assert (cc.block_gb_month, cc.ingress_gb, cc.egress_gb, cc.cross_zone_gb, cc.replication_billed,
            cc.storage_per_replica) == (0.08, 0.05, 0.05, 0.0, False, False)
    for p in PLATFORMS.values():  # each names where and when its prices were published
        assert any(year in p.price_list for year in ("2024", "2025", "2026"))
    with pytest.raises(KcodecError, match="^--platform gcp: unknown platform; known: ec2, msk, confluent-cloud$"):
        platform("gcp")


def test_msk_bill_by_hand_replication_costs_nothing():
    c = monthly_cost(STORED, 0, None, None, platform("msk").prices, TOPIC)
    # storage: 4 GB x 5 days x 3 replicas x $0.10 = $6.00 (MSK bills the brokers' volumes)
    assert c.storage == pytest.approx(6.00)
    # network: 120 GB a month x (0.5 producer + 2 groups x 0.25 consumer) x $0.02 = $2.40; replication $0
    assert c.network == pytest.approx(2.40)
    # the same topic self-managed pays its replication: 120 x 2 followers x 0.75 x $0.02 = $3.60 more
    ec2 = monthly_cost(STORED, 0, None, None, replace_price(platform("msk").prices, replication_billed=True), TOPIC)
    assert ec2.network - c.network == pytest.approx(3.60)
    # and on MSK no share of replication changes the bill
    other = TopicEconomics(**{**TOPIC.__dict__, "replication_cross_zone": 0.0})
    assert monthly_cost(STORED, 0, None, None, platform("msk").prices, other).network == pytest.approx(2.40)


def replace_price(p: Prices, **changes) -> Prices:
    import dataclasses
    return dataclasses.replace(p, **changes)


def test_ec2_bill_by_hand_with_the_replication_share():
    c = monthly_cost(STORED, 0, None, None, platform("ec2").prices, TOPIC)
    assert c.storage == pytest.approx(4 * 5 * 3 * 0.08)                               # $4.80
    assert c.network == pytest.approx(4 * DAYS_PER_MONTH * (0.5 + 2 * 0.75 + 2 * 0.25) * 0.02)  # $6.00
    half = TopicEconomics(**{**TOPIC.__dict__, "replication_cross_zone": 0.5})
    assert monthly_cost(STORED, 0, None, None, Prices(), half).network == pytest.approx(120 * 2.0 * 0.02)


def test_confluent_cloud_bill_by_hand_per_gb():
    c = monthly_cost(STORED, 0, None, None, platform("confluent-cloud").prices, TOPIC)
    assert c.storage == pytest.approx(4 * 5 * 1 * 0.08)                  # stored once: $1.60
    assert c.network == pytest.approx(120 * 0.05 + 120 * 2 * 0.05)       # in $6.00 + out for 2 groups $12.00


def test_retention_bytes_caps_what_a_replica_keeps():
    capped = TopicEconomics(retention_days=5, replication_factor=3, max_retained_bytes=10 * GB)
    assert monthly_cost(STORED, 0, None, None, Prices(), capped).storage == pytest.approx(10 * 3 * 0.08)
    # a setting storing half as much fits under the cap: its storage halves only below it
    assert monthly_cost(STORED / 2, 0, None, None, Prices(), capped).storage == pytest.approx(10 * 3 * 0.08)
    assert monthly_cost(STORED / 4, 0, None, None, Prices(), capped).storage == pytest.approx(5 * 3 * 0.08)


@pytest.mark.parametrize("overrides, message", [
    ({"replication_factor": 0.0}, "^--replication-factor 0: must be a whole number, 1 or more$"),
    ({"replication_factor": 2.5}, "^--replication-factor 2.5: must be a whole number, 1 or more$"),
    ({"replication_cross_zone": 1.5}, "^--replication-cross-zone 1.5: is a share of the traffic: between 0 and 1$"),
    ({"producer_cross_zone": -0.1}, "^--producer-cross-zone -0.1: must be a non-negative number$"),
    ({"retention_days": 0.0}, "^--retention-days 0: must be more than 0$"),
    ({"cross_zone_gb": float("nan")}, "^--cross-zone-gb nan: must be a non-negative number$"),
])
def test_price_and_topic_flags_are_range_checked(overrides, message):
    with pytest.raises(KcodecError, match=message):
        check_options(Options(price_overrides=overrides))


def test_unknown_platform_before_spark():
    with pytest.raises(KcodecError, match="^--platform azure: unknown platform"):
        check_options(Options(platform="azure"))


def test_count_consumer_groups_needs_a_cluster():
    with pytest.raises(KcodecError, match="--count-consumer-groups asks a live cluster"):
        check_options(Options(count_consumer_groups=True))


def test_bill_assumptions_say_where_each_price_came_from(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"prices": {"cross_zone_gb": 0.03}, "defaults": {"consumer_groups": 4}}))
    c = check_options(Options(platform="msk", prices=str(f), price_overrides={"vcpu_hour": 0.5}))
    by_name = {a.name: a for a in c.bill}
    assert by_name["platform"].source == FLAGS and by_name["platform"].value.startswith("msk")
    assert "replication traffic not billed" in by_name["billing"].value
    assert (by_name["storage $/GB-month"].value, by_name["storage $/GB-month"].source) == ("0.1", DEFAULT)
    assert "aws.amazon.com/msk/pricing" in by_name["storage $/GB-month"].detail
    assert (by_name["crossing zones $/GB"].value, by_name["crossing zones $/GB"].source) == ("0.03", PRICES_FILE)
    assert (by_name["CPU $/vCPU-hour"].value, by_name["CPU $/vCPU-hour"].source) == ("0.5", FLAGS)
    assert c.prices.replication_billed is False and c.prices.vcpu_hour == 0.5
    assert c.file_defaults == {"consumer_groups"}
    default = {a.name: a for a in check_options(Options()).bill}
    assert default["platform"].source == DEFAULT and default["platform"].value.startswith("ec2")


def test_topic_sources_flags_file_cluster_default():
    settings = TopicSettings("orders", 4, 2, {"retention.ms": str(3 * 86_400_000), "retention.bytes": "1000",
                                              "compression.type": "zstd", "cleanup.policy": "compact,delete"}, 5)
    defaults = TopicEconomics(consumer_groups=4)
    p = price_topic("orders", defaults, {}, {"producer_cross_zone"}, cluster=settings,
                    file_defaults={"consumer_groups"}, topic_fields={}, prices_path="p.json")
    e = p.economics
    assert (e.retention_days, e.replication_factor, e.max_retained_bytes, e.consumer_groups) == (3, 2, 4000, 5)
    assert p.sources["retention_days"] == (CLUSTER, "retention.ms=259200000 (DescribeConfigs)")
    assert p.sources["replication_factor"][0] == CLUSTER and p.sources["consumer_groups"][0] == CLUSTER
    assert p.sources["producer_cross_zone"] == (FLAGS, "--producer-cross-zone")
    assert p.sources["consumer_cross_zone"] == (DEFAULT, "")
    assert any("compression.type=zstd" in n and "rebuild" in n for n in p.notes)
    assert any("cleanup.policy=compact,delete" in n for n in p.notes)
    assert any("did not return remote.storage.enable" in n for n in p.notes)
    # a flag wins over the cluster, and the note says what the cluster said
    p = price_topic("orders", TopicEconomics(retention_days=30), {}, {"retention_days"}, cluster=settings,
                    topic_fields={})
    assert p.economics.retention_days == 30 and p.sources["retention_days"] == (FLAGS, "--retention-days")
    assert any("though the cluster says retention.ms=259200000" in n for n in p.notes)
    # a topic's own --prices entry wins for the fields it sets, the cluster gives the rest
    given = TopicEconomics(retention_days=9, replication_factor=3)
    p = price_topic("orders", defaults, {"orders": given}, set(), cluster=settings,
                    topic_fields={"orders": {"retention_days"}}, prices_path="p.json")
    assert (p.economics.retention_days, p.economics.replication_factor) == (9, 2)
    assert p.sources["retention_days"] == (PRICES_FILE, "p.json: topic orders")


def test_tiered_storage_from_the_cluster():
    s = TopicSettings("t", 1, 3, {"retention.ms": str(10 * 86_400_000), "remote.storage.enable": "true",
                                  "local.retention.ms": str(86_400_000)})
    p = price_topic("t", TopicEconomics(), {}, set(), cluster=s, topic_fields={})
    assert (p.economics.retention_days, p.economics.local_retention_days) == (10, 1)
    assert p.sources["local_retention_days"][0] == CLUSTER


def _advice():
    from kcodec.advise.assumptions import topic_assumptions
    from kcodec.advise.recommend import Rule, advise_topic
    from kcodec.advise.topic_profile import Spread
    from test_advise_recommend import agg

    stats = Spread(p10=10.0, p50=20.0, p90=30.0, mean=20.0)
    a = agg(batch_records=stats, batch_bytes=stats, magic_batches={0: 0, 1: 0, 2: 1000},
            record_size_hist=(0,) * 10 + (100_000,) + (0,) * 10, log_append_batches=0)
    priced = price_topic("orders", TopicEconomics(), {}, {"consumer_groups"},
                         cluster=TopicSettings("orders", 3, 2, {"retention.ms": str(2 * 86_400_000)}),
                         topic_fields={})
    advice = advise_topic("orders", a, None, priced.economics, platform("msk").prices, Rule())
    advice.notes.extend(priced.notes)
    advice.assumptions = topic_assumptions(priced.economics, priced.sources, advice.stored_per_day,
                                           advice.per_day_source, platform("msk").prices)
    return advice


def test_every_assumption_in_the_terminal_the_html_and_the_json(tmp_path):
    pytest.importorskip("matplotlib")
    from kcodec.advise.report import summary_text, write_reports

    advice = _advice()
    bill = check_options(Options(platform="msk", price_overrides={"block_gb_month": 0.12})).bill
    text = summary_text([advice], bill=bill)
    assert "from flags:        platform msk" in text and "storage $/GB-month 0.12 (--block-gb-month)" in text
    assert "default:           tiered (object) storage $/GB-month 0.023" in text
    assert "measured:          bytes a day" in text
    assert "from the cluster:  retention, days 2 (retention.ms=172800000 (DescribeConfigs)); replication " \
           "factor 2 (2 replicas per partition (Metadata))" in text
    assert "consumer groups 1 (--consumer-groups)" in text
    paths = write_reports(tmp_path, [advice], {"input": "x", "assumptions": [a.doc() for a in bill]})
    doc = json.loads(paths["json"].read_text())
    assert {"name": "platform", "value": "msk (Amazon MSK provisioned (standard brokers))", "source": FLAGS,
            "detail": "--platform"} in doc["context"]["assumptions"]
    topic = {a["name"]: a for a in doc["topics"][0]["assumptions"]}
    assert topic["retention, days"]["source"] == CLUSTER and topic["bytes a day"]["source"] == MEASURED
    assert topic["replication crossing zones"] == {"name": "replication crossing zones", "value": "100%",
                                                   "source": DEFAULT, "detail": "not billed on this platform"}
    assert "replication crossing zones 100% (not billed on this platform)" in text
    html = paths["html"].read_text()
    assert "<td>retention, days</td><td class=l>2</td><td class=l>from the cluster <sup>[2]</sup></td>" in html
    assert "<li>retention.ms=172800000 (DescribeConfigs)</li>" in html
    assert ("<td>platform</td><td class=l>msk (Amazon MSK provisioned (standard brokers))</td>"
            "<td class=l>from flags <sup>[1]</sup></td>") in html
    # the price list stands once, as the note of the five prices taken from it
    price_list = html_text(f"msk list price: {platform('msk').price_list}")
    assert html.count(price_list) == 1 and html.count("<td class=l>default <sup>[4]</sup></td>") == 5
    assert f"<li>{price_list}</li></ol>" in html
    assert "{'" not in html  # no Python dict printed


def test_single_topic_report_fits_its_words_at_1280px(tmp_path):
    """One topic's report, its bill and assumptions from the msk profile: no table cell narrower than its
    longest word, in ``report.html`` and in the topic's page, and neither wider than the window."""
    pytest.importorskip("matplotlib")
    from browser import chromium, measure_page
    from kcodec.advise.report import write_reports

    bill = check_options(Options(platform="msk", price_overrides={"block_gb_month": 0.12})).bill
    paths = write_reports(tmp_path, [_advice()], {"input": "x", "assumptions": [a.doc() for a in bill]})
    if chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium): the page was not rendered")
    for page in (paths["html"], tmp_path / "topics" / "orders.html"):
        got = measure_page(page)
        assert got["scroll"] <= got["client"] == 1280, got
        assert got["cells"] > 20 and got["narrow_count"] == 0, got["narrow"]
