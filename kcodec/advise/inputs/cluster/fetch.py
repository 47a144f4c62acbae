"""A bounded sample of a live cluster's record batches, exactly as the broker stores them.

The driver reads metadata and each partition's offset range and plans
*chunks*: ranges of offsets spread over a topic's partitions and over each
partition's range, ``sample_bytes`` per topic in all.  Spark tasks fetch the
chunks; each chunk's ``data`` is a run of whole batches cut from Fetch
responses byte for byte (any magic, any codec, never decoded), so the codec
and batch shape the producers chose are measured, not assumed.  Nothing is
committed and no consumer group is joined (:mod:`kcodec.advise.inputs.cluster.protocol`).
"""
from __future__ import annotations

import math
import re
import struct
import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from kcodec.advise.inputs.chunks import CHUNK_DDL, chunk_batch
from kcodec.advise.inputs.cluster.protocol import (
    EARLIEST,
    LATEST,
    BrokerSession,
    FetchedRecords,
    LeaderMoved,
    OffsetOutOfRange,
    PartitionMeta,
    error_name,
)
from kcodec.advise.inputs.cluster.security import PLAINTEXT, ClientSecurity
from kcodec.errors import ClusterError
from kcodec.records import batch_header
from kcodec.records.framing import LOG_OVERHEAD, iter_entries

__all__ = [
    "CHUNK_DDL",
    "INTERNAL_TOPICS",
    "Chunk",
    "ChunkRead",
    "DEFAULT_FETCH_RETRY_S",
    "PartitionRange",
    "change_offsets",
    "cluster_volumes",
    "fetch_chunks",
    "list_offset_ranges",
    "plan_check_chunks",
    "plan_chunks",
    "read_chunk",
    "select_partitions",
]

_PLAN_DDL = "topic string, partition int, chunk int, offset long, stop long, max_bytes long, leader int"
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
# Bytes asked for per Fetch request: Kafka's default max.partition.fetch.bytes.
REQUEST_BYTES = 1 << 20
# The largest single batch a chunk grows its request to (Kafka's message.max.bytes is far lower).
MAX_BATCH_BYTES = 256 << 20
_NAMES_SHOWN = 8


@dataclass(frozen=True)
class PartitionRange:
    topic: str
    partition: int
    start: int  #: log start offset
    end: int  #: end offset as ListOffsets(LATEST) reports it (the high watermark on Kafka)


@dataclass(frozen=True)
class Chunk:
    """Offsets ``[offset, stop)`` of one partition, read up to ``max_bytes``; ``stop`` None
    reads to the high watermark the Fetch responses report."""

    topic: str
    partition: int
    chunk: int
    offset: int
    stop: Optional[int]
    max_bytes: int


@dataclass(frozen=True)
class ChunkRead:
    data: bytes  #: whole batches, as fetched
    batches: int
    next_offset: int  #: first offset after the last batch taken
    high_watermark: int  #: from the last Fetch response, -1 if none answered
    partial_bytes: int  #: bytes of trailing partial batches cut from Fetch responses
    requests: int


# -- selection ------------------------------------------------------------------------------------
def select_partitions(metas: Sequence[PartitionMeta], topic_regex: Optional[str],
                      bootstrap: str) -> List[PartitionMeta]:
    """The partitions of ``metas`` (a Metadata answer) whose topic ``topic_regex`` matches whole (every
    non-internal topic when None); ClusterError names the regex, or the partition that cannot be read."""
    if topic_regex is None:
        pattern = None
    else:
        try:
            pattern = re.compile(topic_regex)
        except re.error as exc:
            raise ClusterError(f"topic regex {topic_regex!r} is not a valid regular expression: {exc}") from None
    # Internal topics only when the pattern spells out their "__" prefix.
    with_internal = topic_regex is not None and "__" in topic_regex
    chosen = [m for m in metas
              if (pattern is None or pattern.fullmatch(m.topic))
              and (with_internal or not (m.internal or m.topic in INTERNAL_TOPICS))]
    if not chosen:
        # the names the regex matches in part first: a regex that matches no name whole is most often
        # one that was meant to (Kafka's tools match whole names too)
        names = sorted({m.topic for m in metas},
                       key=lambda n: (pattern is None or pattern.search(n) is None, n))
        shown = ", ".join(names[:_NAMES_SHOWN]) + (f", ... ({len(names)} in all)" if len(names) > _NAMES_SHOWN else "")
        if topic_regex is None:
            raise ClusterError(f"no topics to read at {bootstrap}" + (f" (only internal: {shown})" if names else ""))
        raise ClusterError(f"topic regex {topic_regex!r} matches no topic at {bootstrap} "
                           f"(topics there: {shown or 'none'})")
    for m in chosen:
        if m.error or m.leader < 0:
            reason = error_name(m.error) if m.error else "no leader"
            raise ClusterError(f"partition {m.topic}-{m.partition} at {bootstrap} cannot be read: {reason}")
    return chosen


def list_offset_ranges(bootstrap: str, chosen: Sequence[PartitionMeta],
                       timeout_s: float = 10.0, security: ClientSecurity = PLAINTEXT) -> List[PartitionRange]:
    """Each partition's offset range (ListOffsets at its leader), the partitions and leaders as
    Metadata listed them: no Metadata is asked again."""
    with BrokerSession(bootstrap, timeout_s, security) as session:
        return _offset_ranges(session, chosen)


def _offset_ranges(session: BrokerSession, chosen: Sequence[PartitionMeta]) -> List[PartitionRange]:
    by_leader: Dict[Tuple[int, str], List[int]] = {}
    for m in chosen:
        by_leader.setdefault((m.leader, m.topic), []).append(m.partition)
    out: List[PartitionRange] = []
    for (leader, topic), parts in sorted(by_leader.items()):
        start = session.list_offsets(leader, topic, parts, EARLIEST)
        end = session.list_offsets(leader, topic, parts, LATEST)
        out.extend(PartitionRange(topic, p, start[p], end[p]) for p in parts)
    return sorted(out, key=lambda r: (r.topic, r.partition))


# -- planning -------------------------------------------------------------------------------------
def _spread(n: int, weights: Sequence[int]) -> List[int]:
    """``n`` chunks over partitions holding ``weights`` records: in proportion (largest
    remainder), at least one each while chunks last, never more than a partition's records
    (``n`` is at most their sum)."""
    k = len(weights)
    if n <= k:
        # Fewer chunks than partitions: one each for evenly spaced partitions.
        counts = [0] * k
        for i in range(n):
            counts[((2 * i + 1) * k) // (2 * n)] = 1
        return counts
    total = sum(weights)
    shares = [n * w / total for w in weights]
    counts = [min(w, max(1, int(s))) for w, s in zip(weights, shares)]
    while sum(counts) < n:
        i = max((i for i in range(k) if counts[i] < weights[i]), key=lambda i: shares[i] - counts[i])
        counts[i] += 1
    while sum(counts) > n:
        i = min((i for i in range(k) if counts[i] > 1), key=lambda i: shares[i] - counts[i])
        counts[i] -= 1
    return counts


def plan_chunks(ranges: Sequence[PartitionRange], sample_bytes: int, chunk_bytes: int) -> List[Chunk]:
    """Chunks of at most ``chunk_bytes`` summing to ``sample_bytes`` per topic, spread over the
    topic's non-empty partitions (in proportion to their records) and evenly over each
    partition's offset range; consecutive chunks of a partition never overlap."""
    if sample_bytes <= 0 or chunk_bytes <= 0:
        raise ClusterError(f"sample and chunk sizes must be positive (got {sample_bytes}, {chunk_bytes})")
    topics: Dict[str, List[PartitionRange]] = {}
    for r in ranges:
        topics.setdefault(r.topic, []).append(r)
    chunks: List[Chunk] = []
    for topic in sorted(topics):
        filled = [r for r in sorted(topics[topic], key=lambda r: r.partition) if r.end > r.start]
        if not filled:
            continue
        n = min(math.ceil(sample_bytes / chunk_bytes), sum(r.end - r.start for r in filled))
        spans: List[Tuple[int, int, int, Optional[int]]] = []
        for r, k in zip(filled, _spread(n, [r.end - r.start for r in filled])):
            starts = [r.start + (r.end - r.start) * i // k for i in range(k)]
            spans.extend((r.partition, i, at, starts[i + 1] if i + 1 < k else None) for i, at in enumerate(starts))
        base, extra = divmod(sample_bytes, len(spans))
        chunks.extend(Chunk(topic, partition, i, at, stop, min(chunk_bytes, base + (j < extra)))
                      for j, (partition, i, at, stop) in enumerate(spans))
    return chunks


def plan_check_chunks(ranges: Sequence[PartitionRange], changes: Dict[Tuple[str, int], int], sample_bytes: int,
                      chunk_bytes: int) -> List[Chunk]:
    """``--check``'s chunks: ``sample_bytes`` per topic from each partition's offsets before its change (at
    ``changes``, :func:`change_offsets`), each such range stopping at the change, and ``sample_bytes`` from
    the change on; a partition's chunks are numbered in offset order."""
    before, after = [], []
    stops: Dict[Tuple[str, int], int] = {}
    for r in ranges:
        at = stops[(r.topic, r.partition)] = max(r.start, changes.get((r.topic, r.partition), r.start))
        before.append(PartitionRange(r.topic, r.partition, r.start, min(at, r.end)))
        after.append(PartitionRange(r.topic, r.partition, at, max(at, r.end)))
    out = [c if c.stop is not None else
           Chunk(c.topic, c.partition, c.chunk, c.offset, stops[(c.topic, c.partition)], c.max_bytes)
           for c in plan_chunks(before, sample_bytes, chunk_bytes)]
    taken: Dict[Tuple[str, int], int] = {}
    for c in out:
        taken[(c.topic, c.partition)] = taken.get((c.topic, c.partition), 0) + 1
    out.extend(Chunk(c.topic, c.partition, c.chunk + taken.get((c.topic, c.partition), 0), c.offset, c.stop,
                     c.max_bytes) for c in plan_chunks(after, sample_bytes, chunk_bytes))
    return out


# -- reading --------------------------------------------------------------------------------------
def _entry_size(buf) -> int:
    """The whole size of the entry starting ``buf`` (its size field, at the same place in every magic)."""
    return struct.unpack_from(">i", buf, batch_header.LENGTH)[0] + LOG_OVERHEAD


def _last_offset(buf: bytes, entry) -> int:
    if entry.magic >= 2:
        return batch_header.last_offset_and_max_timestamp(buf, entry.position)[0]
    return entry.offset  # a v0/v1 entry (or compressed wrapper) carries its last offset


#: How long a read keeps asking a broker that answers a Fetch below its high watermark with no
#: records (a slow broker: Tansu took well over 200 ms on a partition of 300,000 one-record batches)
#: before it calls the partition unreadable; ``kcodec advise --fetch-retry-s``.
DEFAULT_FETCH_RETRY_S = 30.0
_RETRY_FIRST_S = 0.05
_RETRY_MAX_S = 1.0


def read_chunk(fetch: Callable[[int, int], FetchedRecords], offset: int, stop: Optional[int],
               max_bytes: int, where: str = "the partition", retry_s: float = DEFAULT_FETCH_RETRY_S,
               sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> ChunkRead:
    """Whole batches whose last offset lies in ``[offset, stop)``, at most ``max_bytes`` of them
    (a first batch larger than that is taken alone), through ``fetch(offset, max_bytes)``.

    Fetch responses may end in a partial batch: it is cut off, counted in ``partial_bytes`` and
    fetched whole by the next request.  Reading ends at ``stop``, at the byte budget, or at the
    high watermark of the latest response.  ``where`` names the partition in errors.  A response
    with no records below the high watermark is asked again, waiting 50 ms doubling to 1 s between
    tries, for up to ``retry_s`` seconds from the first empty answer at that offset.
    """
    out = bytearray()
    batches = partial = requests = 0
    hwm = -1
    grow = 0
    empty_since: Optional[float] = None
    wait = _RETRY_FIRST_S
    while len(out) < max_bytes and (stop is None or offset < stop) and (hwm < 0 or offset < hwm):
        ask = max(min(max_bytes - len(out), REQUEST_BYTES), grow)
        got = fetch(offset, ask)
        requests += 1
        hwm = got.high_watermark
        records = got.records
        if hwm >= 0 and offset >= hwm:
            break
        entries = list(iter_entries(records))
        whole = entries[-1].position + entries[-1].size if entries else 0
        partial += len(records) - whole
        if not entries:
            if not records:
                now = clock()
                empty_since = now if empty_since is None else empty_since
                if now - empty_since < retry_s:
                    sleep(min(wait, max(0.0, empty_since + retry_s - now)))
                    wait = min(2 * wait, _RETRY_MAX_S)
                    continue
                below = f" below its high watermark {hwm}" if hwm >= 0 else ""
                raise ClusterError(f"{where}: the broker returned no records at offset {offset}{below} "
                                   f"(asked for {retry_s:g} s, --fetch-retry-s)")
            if out:
                break  # the next batch does not fit the budget
            # A first batch larger than the request: ask for all of it.
            need = _entry_size(records) if len(records) >= LOG_OVERHEAD else 2 * ask
            if need > MAX_BATCH_BYTES or ask >= MAX_BATCH_BYTES:
                raise ClusterError(f"{where}: the batch at offset {offset} is larger than {MAX_BATCH_BYTES} bytes")
            grow = max(need, ask + 1)
            continue
        grow = 0
        empty_since, wait = None, _RETRY_FIRST_S
        done = False
        taken = batches
        for e in entries:
            last = _last_offset(records, e)
            if last < offset:
                continue  # before the range: a batch the broker returned whole around the start
            if stop is not None and last >= stop:
                done = True
                break
            if out and len(out) + e.size > max_bytes:
                done = True
                break
            out += records[e.position:e.position + e.size]
            batches += 1
            offset = last + 1
            if len(out) >= max_bytes:
                done = True
                break
        if done:
            break
        if batches == taken:
            raise ClusterError(f"{where}: the broker returned only batches before offset {offset}")
    return ChunkRead(bytes(out), batches, offset, hwm, partial, requests)


class _Reader:
    """Reads chunks through one session, finding each partition's leader once."""

    def __init__(self, bootstrap: str, timeout_s: float, retry_s: float = DEFAULT_FETCH_RETRY_S,
                 leaders: Optional[Dict[Tuple[str, int], int]] = None, security: ClientSecurity = PLAINTEXT) -> None:
        self.session = BrokerSession(bootstrap, timeout_s, security)
        self.retry_s = retry_s
        self.bootstrap = bootstrap
        # The leaders the driver's Metadata named: asked again only after a leader moved.
        self._leaders: Dict[Tuple[str, int], int] = dict(leaders or {})

    def leader(self, topic: str, partition: int) -> int:
        key = (topic, partition)
        if key not in self._leaders:
            for m in self.session.metadata([topic]):
                self._leaders[(m.topic, m.partition)] = m.leader
            if self._leaders.get(key, -1) < 0:
                raise ClusterError(f"partition {topic}-{partition} at {self.bootstrap} has no leader")
        return self._leaders[key]

    def read(self, topic: str, partition: int, offset: int, stop: Optional[int], max_bytes: int) -> ChunkRead:
        try:
            return self._read(topic, partition, offset, stop, max_bytes)
        except LeaderMoved:
            # A leader election since the metadata was read: ask again once.
            self._leaders.clear()
            return self._read(topic, partition, offset, stop, max_bytes)

    def _read(self, topic: str, partition: int, offset: int, stop: Optional[int], max_bytes: int) -> ChunkRead:
        if offset < 0 or max_bytes <= 0:
            raise ClusterError(f"cannot read {topic}-{partition}: offset {offset} and byte budget {max_bytes} "
                               "must be non-negative and positive")
        leader = self.leader(topic, partition)

        def fetch(at: int, n: int) -> FetchedRecords:
            return self.session.fetch(leader, topic, partition, at, n)
        where = f"{topic}-{partition} at {self.bootstrap}"
        try:
            return read_chunk(fetch, offset, stop, max_bytes, where, self.retry_s)
        except OffsetOutOfRange:
            # Retention deleted the range's start since the plan was made: read what is left of it.
            start = self.session.list_offsets(leader, topic, [partition], EARLIEST)[partition]
            if start <= offset:
                raise
            if stop is not None and start >= stop:
                return ChunkRead(b"", 0, offset, -1, 0, 0)
            return read_chunk(fetch, start, stop, max_bytes, where, self.retry_s)

    def close(self) -> None:
        self.session.close()


# -- Spark ----------------------------------------------------------------------------------------
def _fetch_task(bootstrap: str, timeout_s: float, retry_s: float = DEFAULT_FETCH_RETRY_S,
                security: ClientSecurity = PLAINTEXT):
    # ``security`` reaches each task inside this closure, which Spark serialises into the task:
    # never a column of the plan DataFrame, so never in a plan string or the Spark UI.
    def task(plans: Iterator) -> Iterator:
        reader = None
        try:
            for plan in plans:
                for row in plan.to_pylist():
                    if reader is None:
                        reader = _Reader(bootstrap, timeout_s, retry_s, security=security)
                    if row["leader"] is not None and row["leader"] >= 0:
                        reader._leaders.setdefault((row["topic"], row["partition"]), row["leader"])
                    stop = None if row["stop"] is None or row["stop"] < 0 else row["stop"]
                    got = reader.read(row["topic"], row["partition"], row["offset"], stop, row["max_bytes"])
                    if got.data:
                        yield chunk_batch(row["topic"], row["partition"], row["chunk"], got.data)
        finally:
            if reader is not None:
                reader.close()
    return task


def _batch_times(data: bytes) -> Optional[Tuple[int, int]]:
    """(first timestamp, largest timestamp) of whole v2 batches; None for v0/v1 message sets."""
    entries = list(iter_entries(data))
    if not entries or any(e.magic < 2 for e in entries):
        return None
    first = struct.unpack_from(">q", data, entries[0].position + batch_header.BASE_TIMESTAMP)[0]
    last = max(batch_header.last_offset_and_max_timestamp(data, e.position)[1] for e in entries)
    return first, last


def cluster_volumes(bootstrap: str, ranges: Sequence[PartitionRange], leaders: Dict[Tuple[str, int], int],
                    timeout_s: float = 10.0, retry_s: float = DEFAULT_FETCH_RETRY_S,
                    security: ClientSecurity = PLAINTEXT) -> Tuple[Dict[str, int], Dict[str, Tuple[int, int]]]:
    """Per topic, the offsets from each partition's earliest (ListOffsets) to its high watermark and the
    timestamp span they cover: the first batch's first timestamp to the last batch's largest.

    Only the first and the last batch of each partition are fetched.  A partition of v0/v1
    message sets, or whose timestamps are missing, gives no span.
    """
    reader = _Reader(bootstrap, timeout_s, retry_s, leaders, security)
    offsets: Dict[str, int] = {}
    spans: Dict[str, Tuple[int, int]] = {}
    try:
        for r in ranges:
            if r.end <= r.start:
                continue
            head = _batch_times(reader.read(r.topic, r.partition, r.start, None, 1).data)
            last = reader.read(r.topic, r.partition, r.end - 1, None, 1)
            tail = _batch_times(last.data)
            # The end is the high watermark the Fetch reports, which a broker's ListOffsets(LATEST)
            # may fall short of (Tansu answers the last batch's base offset + 1).
            end = max(r.end, last.high_watermark, last.next_offset)
            offsets[r.topic] = offsets.get(r.topic, 0) + end - r.start
            if head is None or tail is None or head[0] < 0 or tail[1] < 0:
                continue
            lo, hi = spans.get(r.topic, (head[0], tail[1]))
            spans[r.topic] = (min(lo, head[0]), max(hi, tail[1]))
    finally:
        reader.close()
    return offsets, spans


def _batch_at(reader: "_Reader", r: PartitionRange, offset: int) -> Optional[Tuple[int, int, int]]:
    """(base offset, last offset, largest timestamp) of the batch holding ``offset``; None past the end, or
    where it is a v0/v1 message set (whose timestamps are not in one header)."""
    data = reader.read(r.topic, r.partition, offset, None, 1).data
    entry = next(iter_entries(data), None)
    if entry is None or entry.magic < 2:
        return None
    last, largest = batch_header.last_offset_and_max_timestamp(data, entry.position)
    return entry.offset, last, largest


def _answer_holds(reader: "_Reader", r: PartitionRange, since_ms: int, answer: int) -> bool:
    """Whether ``answer`` (ListOffsets by ``since_ms``) is where the batches stamped at or after it start: the
    batch holding it has such a stamp and the batch before it none; for -1, the last batch has none."""
    if answer < 0:
        last = _batch_at(reader, r, r.end - 1)
        return last is not None and last[2] < since_ms
    if answer < r.start or answer >= max(r.end, r.start + 1):
        return False
    held = _batch_at(reader, r, answer)
    if held is None or held[2] < since_ms:
        return False
    if held[0] <= r.start:
        return True
    before = _batch_at(reader, r, held[0] - 1)
    return before is not None and before[2] < since_ms


def _search_change(reader: "_Reader", r: PartitionRange, since_ms: int) -> int:
    """The base offset of the first batch whose largest timestamp is at or after ``since_ms``, by bisecting the
    partition's offsets one fetched batch header at a time (a producer's batches are stamped in order, as
    Kafka's time index assumes); past the last batch where none is, the log start for v0/v1 message sets."""
    lo, hi = r.start, r.end
    while lo < hi:
        mid = (lo + hi) // 2
        found = _batch_at(reader, r, mid)
        if found is None:
            return r.start
        base, last, largest = found
        if largest >= since_ms:
            hi = max(lo, base)
        else:
            lo = last + 1
    return lo


def change_offsets(bootstrap: str, ranges: Sequence[PartitionRange], leaders: Dict[Tuple[str, int], int],
                   since_ms: int, timeout_s: float = 10.0, retry_s: float = DEFAULT_FETCH_RETRY_S,
                   security: ClientSecurity = PLAINTEXT) -> Tuple[Dict[Tuple[str, int], int], int]:
    """Each partition's offset from which its batches are stamped at or after ``since_ms`` (``--check``'s
    change), and how many partitions' ListOffsets answers did not hold.

    ListOffsets by timestamp (v1+) answers it at the leader; the answer is checked against the stamps of
    the batch it names and the one before (two one-batch fetches).  A broker whose answer does not hold
    (Tansu answers every timestamp with the log start) is bisected instead: about log2(offsets) one-batch
    fetches.  A partition of v0/v1 message sets gives its log start: all of it is after the change."""
    reader = _Reader(bootstrap, timeout_s, retry_s, leaders, security)
    out: Dict[Tuple[str, int], int] = {}
    searched = 0
    try:
        filled = [r for r in ranges if r.end > r.start]
        by_leader: Dict[Tuple[int, str], List[PartitionRange]] = {}
        for r in filled:
            by_leader.setdefault((reader.leader(r.topic, r.partition), r.topic), []).append(r)
        for (leader, topic), rs in sorted(by_leader.items()):
            answers = reader.session.list_offsets(leader, topic, [r.partition for r in rs], since_ms)
            for r in rs:
                answer = answers.get(r.partition, r.start)
                if _answer_holds(reader, r, since_ms, answer):
                    out[(r.topic, r.partition)] = r.end if answer < 0 else answer
                else:
                    out[(r.topic, r.partition)] = _search_change(reader, r, since_ms)
                    searched += 1
    finally:
        reader.close()
    for r in ranges:
        out.setdefault((r.topic, r.partition), r.start)
    return out, searched


def fetch_chunks(spark, bootstrap: str, chunks: Sequence[Chunk], leaders: Dict[Tuple[str, int], int],
                 timeout_s: float = 10.0, retry_s: float = DEFAULT_FETCH_RETRY_S,
                 security: ClientSecurity = PLAINTEXT):
    """The chunk DataFrame of ``chunks`` (:func:`plan_chunks`), fetched inside Spark tasks from the
    ``leaders`` the driver's Metadata named."""
    rows = [(c.topic, c.partition, c.chunk, c.offset, -1 if c.stop is None else c.stop, c.max_bytes,
             leaders.get((c.topic, c.partition), -1)) for c in chunks]
    plan = spark.createDataFrame(rows, _PLAN_DDL)
    tasks = max(1, min(len(rows), spark.sparkContext.defaultParallelism))
    return plan.repartition(tasks).mapInArrow(_fetch_task(bootstrap, timeout_s, retry_s, security), CHUNK_DDL)
