"""What ``kcodec advise`` reads, checked and listed once before Spark starts: one module or package per input kind.

- ``source``: the interface every kind offers (:class:`Source`): its topics and partitions, what it
  knows of each topic, the chunk DataFrame of its sample, what ``--topic`` and ``--write`` do with it;
- ``logs``: log directories and their URLs, Kafka's tiered-storage layout included (``LogSegment``'s
  files, read as stored); ``logs.tails``, the partial batches at a log's end;
- ``cluster``: a live cluster (``--bootstrap-server``), as a consumer fetches it: ``cluster.protocol``,
  the Kafka protocol spoken; ``cluster.fetch``, the chunks planned and fetched; ``cluster.settings``,
  the topics' settings on the cluster; ``cluster.security``, TLS and SASL (``--command-config``);
- ``files``: Parquet and JSON record files; ``files.timestamps``, what their timestamp column holds;
- ``generated``: the generated sample, when no input is given; ``generated.traffic``, its records;
- ``replayed``: what the two kinds of records share: today's batches replayed at the --current-* flags.

Every kind yields chunks (:mod:`kcodec.advise.inputs.chunks`): runs of whole record batches as stored.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kcodec.advise.inputs.chunks import CHUNK_DDL, chunk_batch
from kcodec.advise.inputs.files import FileSource
from kcodec.advise.inputs.generated import GeneratedSource
from kcodec.advise.inputs.logs import ChunkRange, LogSource, plan_sample, read_chunks
from kcodec.advise.inputs.source import RoundSampledSource, Sampling, Source
from kcodec.errors import KcodecError
from kcodec.storage import Storage, resolve

__all__ = ["CHUNK_DDL", "ChunkRange", "RoundSampledSource", "Sampling", "Source", "check_inputs", "chunk_batch",
           "open_inputs", "plan_sample", "read_chunks"]

RECORD_SUFFIXES = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}


def open_inputs(paths: Sequence[str], fmt: Optional[str], chunk_bytes: int,
                storage_options: Optional[Dict[str, Any]] = None, bootstrap: Optional[str] = None,
                topic_regex: Optional[str] = None, timeout_s: float = 10.0,
                command_config: Optional[str] = None) -> Source:
    """The input the arguments name, listed once, its topics chosen by ``topic_regex`` (``--topic``);
    ``command_config``: the client properties file of a secured cluster (``--command-config``)."""
    if command_config and not bootstrap:
        raise KcodecError(f"--command-config {command_config}: a secured cluster's client properties; give "
                          "--bootstrap-server with it")
    if bootstrap:
        if paths:
            raise KcodecError("--bootstrap-server reads a live cluster: give no input paths with it")
        from kcodec.advise.inputs.cluster import open_cluster
        from kcodec.advise.inputs.cluster.security import PLAINTEXT, read_command_config

        security = read_command_config(command_config) if command_config else PLAINTEXT
        source: Source = open_cluster(bootstrap, timeout_s, security)
    else:
        source = check_inputs(paths, fmt, chunk_bytes, storage_options)
    source.select_topics(topic_regex)
    return source


def check_inputs(paths: Sequence[str], fmt: Optional[str], chunk_bytes: int,
                 storage_options: Optional[Dict[str, Any]] = None) -> Source:
    """Check every input path or URL and say what it is; errors name the path and what was expected."""
    if not paths:
        return GeneratedSource(storage_options)
    if fmt not in (None, "kafka-log", "parquet", "json"):
        raise KcodecError(f"--format {fmt}: choose kafka-log, parquet or json")
    kinds: List[str] = []
    listings: List[Any] = []
    try:
        for path in paths:
            storage, inner = resolve(path, storage_options)
            if not storage.exists(inner):
                raise KcodecError(f"{path}: no such file or directory")
            kind, listing = (fmt, None) if fmt else _guess(storage, inner, storage_options)
            if kind == "kafka-log" and listing is None:
                listing = _open_log_dir(path, storage_options)
            kinds.append(kind)
            listings.append(listing)
        if len(set(kinds)) > 1:
            raise KcodecError(f"inputs of different kinds ({', '.join(sorted(set(kinds)))}): give one kind at a time")
    except BaseException:
        _close(listings)
        raise
    if kinds[0] != "kafka-log":
        return FileSource(paths, kinds[0], storage_options)
    return LogSource(paths, listings, chunk_bytes, storage_options)


def _open_log_dir(path: str, storage_options: Optional[Dict[str, Any]]):
    from kcodec.log.segment import open_log_dir

    return open_log_dir(path, storage_options=storage_options)


def _close(listings: Sequence[Any]) -> None:
    for listing in listings:
        for part in (listing or {}).values():
            part.close()


def _guess(storage: Storage, path: str, storage_options: Optional[Dict[str, Any]]) -> Tuple[str, Any]:
    """The kind of the input at ``path``, and its listing when it is a log directory."""
    from kcodec.log.names import segment_log_offset

    p = storage.url(path)
    if storage.isfile(path):
        name = storage.basename(path)
        suffix = os.path.splitext(name)[1]
        if segment_log_offset(name) is not None or suffix in (".log", ".index", ".timeindex"):
            log_dir = storage.url(storage.parent(storage.parent(path)))
            raise KcodecError(f"{p}: a segment file; give the log directory holding its "
                              f"<topic>-<partition> folder (here {log_dir})")
        if suffix in RECORD_SUFFIXES:
            return RECORD_SUFFIXES[suffix], None
        raise KcodecError(f"{p}: not a Kafka log directory, .parquet or .json file")
    listing = _open_log_dir(p, storage_options)
    if listing:
        return "kafka-log", listing
    suffixes = {os.path.splitext(f.name)[1] for f in storage.list(path) if not f.is_dir}
    found = {RECORD_SUFFIXES[ext] for ext in suffixes if ext in RECORD_SUFFIXES}
    if len(found) == 1:
        return found.pop(), None
    raise KcodecError(f"{p}: not a Kafka log directory (no <topic>-<partition> folder holding "
                      f"NNNNNNNNNNNNNNNNNNNN.log segments) and no .parquet or .json files")

