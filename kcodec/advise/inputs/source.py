"""The interface every input kind of ``kcodec advise`` offers the rest of the pipeline.

An input lists its topics and partitions once, when it is opened, and tells what it
knows of each topic: its stored bytes, the time its log spans, its offsets, where a
partial batch could be, and its settings on the cluster.  It yields the chunk
DataFrame (:data:`kcodec.advise.inputs.chunks.CHUNK_DDL`) the measuring tasks read, and
answers the few questions whose answer depends on what it is, so that nothing
downstream asks which kind it was given.
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kcodec.advise.grid import Setting
from kcodec.errors import KcodecError

__all__ = ["Source", "Sampling", "RoundSampledSource", "compile_topics"]


@dataclass(frozen=True)
class Sampling:
    """How much of an input to read, and how record inputs are batched today."""

    sample_bytes: int  #: --sample, per topic (under --sample auto, the fixed size of inputs not sampled in rounds)
    chunk_bytes: int  #: --chunk
    tasks: int  #: Spark tasks to spread the work over
    current: Setting  #: --current-codec, --current-batch-size, --current-linger-ms
    partitions: int  #: --partitions, for records that name none
    records: int  #: --records of the generated sample
    seed: int  #: --seed of the generated sample
    fetch_retry_s: float  #: --fetch-retry-s, for a live cluster


def compile_topics(regex: str) -> "re.Pattern[str]":
    """``--topic`` as a pattern, or the one-line error naming the flag."""
    try:
        return re.compile(regex)
    except re.error as exc:
        raise KcodecError(f"--topic {regex}: not a regular expression ({exc})") from None


class Source(ABC):
    """One input of ``kcodec advise``, listed once when it is opened."""

    #: today's batches are replayed from records at the --current-* flags, so today's setting,
    #: linger.ms included, is known rather than measured from stored batches
    replays_today = False
    #: every record is measured: the sample is the whole input, not --sample bytes of it
    reads_every_record = False
    #: the records' timestamps are the traffic's own, so a span too short to tell a daily volume matters
    real_time = True
    #: its topic names were checked where they were read (log folders, the generated sample)
    topic_names_checked = True

    def __init__(self, description: str, storage_options: Optional[Dict[str, Any]] = None) -> None:
        self.description = description
        self.storage_options = storage_options  #: for URL inputs and --write
        self.topic_regex: Optional[str] = None  #: --topic: only the topics it matches whole
        self.topic_partitions: Dict[str, int] = {}  #: partitions of each topic, where the input lists them
        self.topic_bytes: Dict[str, int] = {}  #: stored bytes of each topic, where known in full
        self.topic_span_ms: Dict[str, Tuple[int, int]] = {}  #: first and largest timestamp of the whole log
        self.topic_offsets: Dict[str, int] = {}  #: offsets from each partition's earliest to its latest

    # -- topics -----------------------------------------------------------------------------------
    def known_topics(self) -> List[str]:
        """The topics the input names before Spark reads it; empty when only Spark can tell."""
        return sorted(self.topic_partitions)

    def select_topics(self, regex: Optional[str]) -> None:
        """Keep only the topics ``regex`` matches whole (``--topic``); None keeps them all."""
        if regex is None:
            return
        pattern = compile_topics(regex)
        known = self.known_topics()
        if known and not any(pattern.fullmatch(t) for t in known):
            raise KcodecError(f"--topic {regex}: matches none of the topics of {self.description} "
                              f"({', '.join(known)})")
        self._keep(pattern)
        self.topic_regex = regex
        self.description += f" topics /{regex}/"

    def _keep(self, pattern: "re.Pattern[str]") -> None:
        for table in (self.topic_bytes, self.topic_partitions, self.topic_span_ms, self.topic_offsets):
            for t in [t for t in table if not pattern.fullmatch(t)]:
                del table[t]

    def use_timestamp_unit(self, unit: Optional[str]) -> None:
        """Settle how the records' timestamps are read (``--timestamp-unit``); only record files take one."""
        if unit is not None:
            raise KcodecError(f"--timestamp-unit {unit}: only for Parquet or JSON record inputs, whose "
                              f"timestamps may be plain numbers")

    # -- what it knows of a topic -----------------------------------------------------------------
    def rate_partitions(self, topic: str) -> Optional[int]:
        """Partitions a sampled partition's rate is scaled by when the topic's bytes are not known."""
        return None

    def topic_settings(self, count_groups: bool = False) -> Dict[str, Any]:
        """topic -> :class:`~kcodec.advise.inputs.cluster.settings.TopicSettings`, where the input is a cluster."""
        return {}

    def chunk_place(self, topic: str, partition: int, chunk: int) -> Optional[Tuple[str, int]]:
        """(file, byte position) where a chunk starts, for inputs read from files as stored."""
        return None

    def tail_notes(self, spark, topics: Sequence[str]) -> Dict[str, List[str]]:
        """topic -> notes on partitions whose last segment ends in a partial batch."""
        return {}

    # -- what the measuring tasks read ------------------------------------------------------------
    @abstractmethod
    def chunks(self, spark, sampling: Sampling) -> Tuple[Any, Optional[int]]:
        """The chunk DataFrame of the sample, and how many chunks it holds where known before Spark runs."""

    def check_chunks(self, spark, sampling: Sampling, since_ms: Optional[int]) -> Tuple[Any, Optional[int]]:
        """``--check``'s chunk DataFrame: the batches first stamped at or after ``since_ms`` (the change), and
        some from before it; where the input cannot tell where the change lies, its sample (:meth:`chunks`)."""
        return self.chunks(spark, sampling)

    # -- --write ----------------------------------------------------------------------------------
    def check_write(self, out: str) -> None:
        """Refuse ``--write`` before Spark starts when this input cannot be written."""

    @abstractmethod
    def write_records(self, spark, sampling: Sampling):
        """The records ``--write`` rewrites: every topic of the input, with its ``topic`` column."""


class RoundSampledSource(Source):
    """An input whose every chunk of every topic is listed, with its size, before reading:
    ``--sample auto`` reads it in rounds (:mod:`kcodec.advise.auto_sample`)."""

    @abstractmethod
    def sample_candidates(self, cap_bytes: int) -> Tuple[Dict[str, List[Any]], Dict[str, int]]:
        """Each topic's candidate chunks (at most ``cap_bytes``, spread over its partitions and time; each
        with ``topic``, ``partition``, ``chunk`` and ``size``) and how many chunks the whole topic has."""

    @abstractmethod
    def read_sampled(self, spark, sampling: Sampling, chunks: Sequence[Any]):
        """The chunk DataFrame of some of :meth:`sample_candidates`'s chunks."""
