"""``--command-config``: client properties in Java's and librdkafka's names, secrets from the
environment, kafka-python's arguments, and errors that never repeat a secret (no broker here:
tests/test_advise_cluster_secure.py has the real TLS and SASL endpoints)."""
from __future__ import annotations

import base64
import http.server
import json
import os
import pathlib
import pickle
import ssl
import threading
import urllib.parse

import pytest

from kcodec.advise.inputs.cluster.security import (
    IGNORED,
    PROPERTIES,
    ClientSecurity,
    OAuthClient,
    Secret,
    client_args,
    fetch_token,
    parse_jaas,
    parse_properties,
    read_command_config,
    security_from_properties,
    ssl_context,
)
from kcodec.errors import ClusterError, KcodecError

PASSWORD = "pa55-w0rd-in-a-test"
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
              f'password="{PASSWORD}";')


def _config(tmp_path: pathlib.Path, text: str, environ=None) -> ClientSecurity:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return read_command_config(str(path), environ or {})


def _refused(tmp_path, text, environ=None) -> str:
    with pytest.raises(KcodecError) as info:
        _config(tmp_path, text, environ)
    message = str(info.value)
    assert "\n" not in message and PASSWORD not in message, message
    return message


def test_properties_are_read_as_java_reads_them():
    text = ("# a comment\n! another\n  security.protocol = SASL_SSL\nsasl.mechanism: SCRAM-SHA-512\n"
            "client.id kcodec\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule \\\n"
            "    required username=\"alice\" \\\n    password=\"x\\\\\\\\y\";\nkey\\ with\\:colon=caf\\u00e9\n"
            "empty\nclient.id=twice\n")
    props = parse_properties(text)
    assert props == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "client.id": "twice",
                     "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                         'username="alice" password="x\\\\y";',
                     "key with:colon": "café", "empty": ""}
    # the JAAS quoting unescapes once more: the password is x\y
    assert parse_jaas(props["sasl.jaas.config"]).options == {"username": "alice", "password": "x\\y"}


def test_java_and_librdkafka_names_give_the_same_connection(tmp_path):
    from broker import Certificates

    ca = Certificates(tmp_path / "certs").path("ca.pem")
    java = _config(tmp_path, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                             f"sasl.jaas.config={SCRAM_JAAS}\nssl.truststore.location={ca}\nssl.truststore.type=PEM\n"
                             "ssl.endpoint.identification.algorithm=https\n")
    rdkafka = _config(tmp_path, f"security.protocol=sasl_ssl\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=alice\n"
                                f"sasl.password={PASSWORD}\nssl.ca.location={ca}\n")
    assert java.protocol == "SASL_SSL" and java.mechanism == "SCRAM-SHA-512" and java.username == "alice"
    assert java.password == Secret(PASSWORD) and java.ca_file == ca and java.check_hostname
    assert {**java.__dict__, "source": ""} == {**rdkafka.__dict__, "source": ""}
    args = client_args(java)
    context = args.pop("ssl_context")
    assert args == {"security_protocol": "SASL_SSL", "ssl_check_hostname": True, "sasl_mechanism": "SCRAM-SHA-512",
                    "sasl_plain_username": "alice", "sasl_plain_password": PASSWORD}
    assert isinstance(context, ssl.SSLContext) and context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "kcodec test ca"),),)]
    plain = _config(tmp_path, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                              "org.apache.kafka.common.security.plain.PlainLoginModule required username=bob "
                              f"password={PASSWORD};\n")
    assert client_args(plain) == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                                  "sasl_plain_username": "bob", "sasl_plain_password": PASSWORD}
    assert client_args(_config(tmp_path, "client.id=x\n")) == {}


def test_secrets_come_from_the_environment_or_another_file(tmp_path):
    env = {"KAFKA_PASSWORD": PASSWORD}
    sec = _config(tmp_path, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config="
                            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" "
                            "password=\"${env:KAFKA_PASSWORD}\";\n", env)
    assert sec.password == Secret(PASSWORD) and sec.mechanism == "SCRAM-SHA-256"
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"kafka.password={PASSWORD}\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "user").write_text("alice\n")
    sec = _config(tmp_path, "config.providers=file,dir\n"
                            "config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider\n"
                            "config.providers.dir.class=org.apache.kafka.common.config.provider."
                            "DirectoryConfigProvider\nsecurity.protocol=SASL_SSL\nsasl.mechanisms=PLAIN\n"
                            f"sasl.username=${{dir:{tmp_path / 'dir'}:user}}\n"
                            f"sasl.password=${{file:{secrets}:kafka.password}}\n")
    assert (sec.username, sec.password) == ("alice", Secret(PASSWORD))
    message = _refused(tmp_path, "security.protocol=SASL_SSL\nsasl.mechanisms=PLAIN\nsasl.username=alice\n"
                                 "sasl.password=${env:KAFKA_PASSWORD}\n")
    assert message.endswith("sasl.password reads environment variable KAFKA_PASSWORD, which is not set"), message
    assert "config provider 'vault'" in _refused(tmp_path, "sasl.password=${vault:x:y}\n")


def test_a_secret_is_never_printed_and_survives_pickling():
    sec = security_from_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                    "sasl.jaas.config": SCRAM_JAAS}, "test", {})
    for text in (repr(sec), str(sec), sec.describe(), repr(sec.password), f"{sec.password}"):
        assert PASSWORD not in text, text
    assert sec.describe() == "SASL_SSL, SCRAM-SHA-512 as alice"
    # how the Spark tasks receive it: pickled inside the fetch function's closure
    again = pickle.loads(pickle.dumps(sec))
    assert again == sec and again.password is not None and again.password.reveal() == PASSWORD


@pytest.mark.parametrize("text, expected", [
    ("security.protocol=SASL_TLS\n", "security.protocol 'SASL_TLS' is not one of"),
    ("security.protocol=SASL_SSL\n", "needs sasl.mechanism (the clients' default, GSSAPI, is not supported"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n", "sasl.mechanism GSSAPI is not supported"),
    (f"security.protocol=SSL\nsasl.mechanism=PLAIN\nsasl.password={PASSWORD}\n", "use SASL_SSL or SASL_PLAINTEXT"),
    ("security.protocol=PLAINTEXT\nssl.truststore.location=/dev/null\n",
     "ssl.truststore.location is given but security.protocol is PLAINTEXT"),
    (f"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config={SCRAM_JAAS}\n",
     "sasl.jaas.config has ScramLoginModule, which does not serve sasl.mechanism PLAIN"),
    (f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={SCRAM_JAAS[:-1]}\n",
     "the login module must end with ';'"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security."
     f"scram.ScramLoginModule required username=\"alice\" password {PASSWORD};\n",
     "expected key=\"value\" after option 'username'"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security."
     f"scram.ScramLoginModule required username=\"alice\" password=\"{PASSWORD};\n", "a quoted value is not closed"),
    ("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=alice\n",
     "needs a username and a password"),
    (f"security.protocol=SASL_SSL\nsasl.mechanisms=PLAIN\nsasl.username=a\nsasl.password={PASSWORD}\n"
     f"sasl.jaas.config={SCRAM_JAAS.replace('scram.Scram', 'plain.Plain')}\n", "not both"),
    ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=AWS_MSK_IAM\n", "AWS_MSK_IAM needs security.protocol SASL_SSL"),
    (f"security.protocol=SSL\nssl.keystore.location=/dev/null\nssl.keystore.password={PASSWORD}\n",
     "ssl.keystore.password is not used with a PEM key store"),
    ("security.protocol=SSL\nssl.endpoint.identification.algorithm=ldap\n",
     "ssl.endpoint.identification.algorithm 'ldap'"),
    ("security.protocol=SSL\nssl.cipher.suites=TLS_AES_128_GCM_SHA256\n", "ssl.cipher.suites: not supported"),
    ("security.protocol=SSL\nssl.truststore.location=/no/such/ca.pem\n",
     "cannot read /no/such/ca.pem: No such file or directory"),
    ("security.protocol=SSL\nssl.key.pem=x\n", "a client certificate and its key given as PEM text go together"),
])
def test_each_mistake_is_one_line_naming_the_property(tmp_path, text, expected):
    message = _refused(tmp_path, text)
    assert message.startswith(f"--command-config {tmp_path / 'client.properties'}: ") and expected in message, message


def test_properties_of_the_jvm_alone_are_accepted_and_the_rest_of_a_client_file_too(tmp_path):
    text = "security.protocol=SSL\n" + "".join(f"{name}=x\n" for name in sorted(IGNORED)) + \
        "client.id=me\nrequest.timeout.ms=1000\nbootstrap.servers=elsewhere:9092\n"
    assert _config(tmp_path, text).protocol == "SSL"


def test_java_key_stores_get_the_command_that_converts_them(tmp_path):
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    message = _refused(tmp_path, f"security.protocol=SSL\nssl.truststore.location={jks}\n")
    assert f"ssl.truststore.location is a JKS store; kcodec advise reads PEM: convert it with keytool -exportcert " \
           f"-rfc -keystore {jks} -storetype JKS" in message, message
    p12 = tmp_path / "client.p12"
    p12.write_bytes(b"\x30\x82" + bytes(62))
    message = _refused(tmp_path, f"security.protocol=SSL\nssl.keystore.location={p12}\nssl.keystore.type=PKCS12\n"
                                 f"ssl.keystore.password={PASSWORD}\n")
    assert "ssl.keystore.location is a PKCS12 store" in message and "openssl pkcs12 -in client.p12 -out " \
           "client.pem -nodes" in message, message
    assert "librdkafka" not in message


def test_client_certificates_load_from_files_and_from_pem_text(tmp_path):
    from broker import Certificates

    certs = Certificates(tmp_path / "certs")
    from_files = _config(tmp_path, f"security.protocol=SSL\nssl.ca.location={certs.path('ca.pem')}\n"
                                   f"ssl.certificate.location={certs.path('client.pem')}\n"
                                   f"ssl.key.location={certs.path('client.key')}\n")
    ssl_context(from_files)
    key = pathlib.Path(certs.path("client.key")).read_text()
    chain = pathlib.Path(certs.path("client.pem")).read_text()
    inline = security_from_properties({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                                       "ssl.truststore.certificates": pathlib.Path(certs.path("ca.pem")).read_text(),
                                       "ssl.keystore.certificate.chain": chain, "ssl.keystore.key": key},
                                      "test", {})
    assert inline.key_pem == Secret(key) and key.strip() not in repr(inline)
    before = set(os.listdir(os.environ.get("TMPDIR", "/tmp")))
    ssl_context(inline)
    left = {n for n in set(os.listdir(os.environ.get("TMPDIR", "/tmp"))) - before if n.startswith("kcodec-tls-")}
    assert not left, left  # the key written for the ssl module is gone
    wrong = security_from_properties({"security.protocol": "SSL", "ssl.certificate.location": certs.path("client.pem"),
                                      "ssl.key.location": certs.path("other-ca.key")}, "test", {})
    with pytest.raises(ClusterError, match=r"^test: client certificate .*client.pem and its key cannot be loaded: "):
        ssl_context(wrong)


def test_hostname_checks_and_verification_follow_the_properties(tmp_path):
    off = security_from_properties({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""},
                                   "t", {})
    none = security_from_properties({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none"},
                                    "t", {})
    assert not off.check_hostname and not none.check_hostname and not ssl_context(off).check_hostname
    trusting_all = security_from_properties({"security.protocol": "SSL",
                                             "enable.ssl.certificate.verification": "false"}, "t", {})
    assert ssl_context(trusting_all).verify_mode == ssl.CERT_NONE
    assert ssl_context(security_from_properties({"security.protocol": "SSL"}, "t", {})).check_hostname


class _TokenEndpoint(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append((self.headers["Authorization"], urllib.parse.parse_qs(body.decode())))
        ok = self.headers["Authorization"] == "Basic " + base64.b64encode(f"advise:{PASSWORD}".encode()).decode()
        data = json.dumps({"access_token": "tok-123", "token_type": "bearer", "expires_in": 300}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(data) if ok else 0))
        self.end_headers()
        if ok:
            self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_oauthbearer_takes_a_token_from_a_client_credentials_grant(tmp_path):
    server = http.server.HTTPServer(("127.0.0.1", 0), _TokenEndpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/token"
    try:
        sec = _config(tmp_path, "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
                                f"sasl.oauthbearer.token.endpoint.url={url}\nsasl.jaas.config=org.apache.kafka."
                                "common.security.oauthbearer.OAuthBearerLoginModule required clientId=advise "
                                f"clientSecret=\"{PASSWORD}\" scope=kafka;\n")
        assert sec.oauth == OAuthClient(url, "advise", Secret(PASSWORD), "kafka")
        assert fetch_token(sec.oauth, "t") == ("tok-123", 300.0)
        assert _TokenEndpoint.seen[-1][1] == {"grant_type": ["client_credentials"], "scope": ["kafka"]}
        provider = client_args(sec)["sasl_oauth_token_provider"]
        assert provider.token() == "tok-123" and len(_TokenEndpoint.seen) == 2
        assert provider.token() == "tok-123" and len(_TokenEndpoint.seen) == 2  # kept until near its end
        rdkafka = _config(tmp_path, "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
                                    "sasl.oauthbearer.method=oidc\nsasl.oauthbearer.client.id=advise\n"
                                    "sasl.oauthbearer.client.secret=wrong-one\n"
                                    f"sasl.oauthbearer.token.endpoint.url={url}\n")
        with pytest.raises(ClusterError) as info:
            fetch_token(rdkafka.oauth, "t")
        assert str(info.value) == f"t: OAuth token from {url}: HTTP 401 Unauthorized (are the client id and " \
                                  "secret right?)"
    finally:
        server.shutdown()
        server.server_close()


def test_the_operators_guide_lists_every_property_as_the_code_reads_it():
    guide = (pathlib.Path(__file__).parent.parent / "docs" / "operator.md").read_text()
    for p in PROPERTIES:
        row = (f"| {f'`{p.java}`' if p.java else ''} | {f'`{p.librdkafka}`' if p.librdkafka else ''} | "
               f"{'yes' if p.secret else ''} | {p.doc} |")
        assert row in guide, row


def test_command_config_needs_a_cluster(tmp_path):
    from kcodec.advise.inputs import open_inputs

    with pytest.raises(KcodecError, match=r"^--command-config c.properties: a secured cluster's client properties; "
                                          r"give --bootstrap-server with it$"):
        open_inputs([str(tmp_path)], None, 1 << 20, command_config="c.properties")


class _KafkaAnswers:
    """The answers Apache Kafka gives on the checking connection, as bytes after the correlation id."""

    def __init__(self, handshake: bytes, authenticate: bytes = b"") -> None:
        self.answers = {17: handshake, 36: authenticate}
        self.asked = []

    def request(self, api_key, version, body, what):
        self.asked.append((api_key, version, body))
        return memoryview(self.answers[api_key])


def _strings(*names: str) -> bytes:
    import struct

    return struct.pack(">i", len(names)) + b"".join(struct.pack(">h", len(n)) + n.encode() for n in names)


def test_kafkas_own_refusals_are_one_line(tmp_path):
    """UNSUPPORTED_SASL_MECHANISM (33) lists what the broker offers; SASL_AUTHENTICATION_FAILED (58)
    carries the broker's message.  Neither holds the password, which went only into the token."""
    import struct

    from kcodec.advise.inputs.cluster.security import _authenticate

    plain = security_from_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                      "sasl.username": "advise", "sasl.password": PASSWORD}, "t", {})
    answers = _KafkaAnswers(struct.pack(">h", 33) + _strings("SCRAM-SHA-256", "SCRAM-SHA-512"))
    with pytest.raises(ClusterError) as info:
        _authenticate(answers, "b1", plain, "broker b1:9093")
    assert str(info.value) == "SASL at broker b1:9093: the broker does not offer mechanism PLAIN (it offers " \
                              "SCRAM-SHA-256, SCRAM-SHA-512)"
    message = b"Authentication failed: Invalid username or password"
    answers = _KafkaAnswers(struct.pack(">h", 0) + _strings("PLAIN"),
                            struct.pack(">hh", 58, len(message)) + message + struct.pack(">i", 0))
    with pytest.raises(ClusterError) as info:
        _authenticate(answers, "b1", plain, "broker b1:9093")
    assert str(info.value) == "SASL authentication failed at broker b1:9093: PLAIN as user 'advise': " \
                              "Authentication failed: Invalid username or password"
    token = f"advise\0advise\0{PASSWORD}".encode()  # kafka-python names the user as authzid too
    assert answers.asked == [(17, 1, struct.pack(">h", 5) + b"PLAIN"),
                             (36, 0, struct.pack(">i", len(token)) + token)]
