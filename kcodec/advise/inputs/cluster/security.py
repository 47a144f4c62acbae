"""How ``kcodec advise`` authenticates to a secured cluster: ``--command-config FILE``.

The file is a client properties file as Kafka's own tools take it (``kafka-topics.sh
--command-config``), in the Java client's names or in librdkafka's; :data:`PROPERTIES` is the one
table of the names understood, which the parser and the operator's guide read.  Values may name
an environment variable or another file (``${env:NAME}``, ``${file:PATH:KEY}``, Kafka's
configuration providers of KIP-297 and KIP-887) so that no secret needs to sit in the file.

A secret (a password, a private key, an OAuth client secret) is held in a :class:`Secret`, whose
``repr`` and ``str`` print ``***``; it is unwrapped only where kafka-python's connection or the
TLS context takes it.  Error messages name properties, files and variables, never their values.

The Spark tasks that fetch receive the :class:`ClientSecurity` inside the fetch function's
closure, which Spark serialises into each task: never in a DataFrame column, so never in a plan,
a plan row or the Spark UI.  Files named in the properties (CA, certificate, key) are read where
the task runs, so on a Spark cluster of several hosts they must exist at the same path on each.

:func:`check_connection` opens one connection of its own before kafka-python's: the TLS
handshake, and the SASL exchange through kafka-python's own mechanism, so that a certificate the
client does not trust, a hostname mismatch, a refused client certificate, a mechanism the broker
does not offer or a wrong password each become one line naming the broker (kafka-python itself
retries them silently until its timeout).
"""
from __future__ import annotations

import base64
import json
import os
import re
import socket
import ssl
import struct
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from kcodec.errors import ClusterError, KcodecError

__all__ = ["Secret", "ClientSecurity", "OAuthClient", "Property", "PROPERTIES", "IGNORED", "PLAINTEXT",
           "read_command_config", "security_from_properties", "parse_properties", "parse_jaas", "ssl_context",
           "client_args", "fetch_token", "check_connection", "denied"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "AWS_MSK_IAM")
_CLIENT_ID = "kcodec-advise"
_PEM = "-----BEGIN"
# How long a TLS 1.3 connection without a client certificate waits for the broker's refusal of it.
_REFUSAL_WAIT_S = 0.05


class Secret:
    """A value that is never printed: ``repr`` and ``str`` show ``***``; :meth:`reveal` gives it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret(***)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> Tuple[Any, Tuple[str]]:
        return Secret, (self._value,)


@dataclass(frozen=True)
class OAuthClient:
    """An OAuth 2 client-credentials grant (KIP-768, librdkafka's ``sasl.oauthbearer.method=oidc``)."""

    token_url: str
    client_id: str
    client_secret: Secret
    scope: Optional[str] = None


@dataclass(frozen=True)
class ClientSecurity:
    """What a connection to the cluster needs beyond its address; secrets are :class:`Secret`."""

    protocol: str = "PLAINTEXT"
    mechanism: Optional[str] = None
    username: Optional[str] = None
    password: Optional[Secret] = None
    ca_file: Optional[str] = None  #: PEM file of the CAs to trust (None: the system's)
    ca_dir: Optional[str] = None  #: a folder of hashed PEM CAs (librdkafka's ssl.ca.location may name one)
    ca_pem: Optional[str] = None  #: PEM text of the CAs to trust
    cert_file: Optional[str] = None  #: the client's certificate chain, PEM (may hold the key too)
    key_file: Optional[str] = None
    cert_pem: Optional[str] = None
    key_pem: Optional[Secret] = None
    key_password: Optional[Secret] = None
    crl_file: Optional[str] = None
    check_hostname: bool = True
    verify: bool = True
    oauth: Optional[OAuthClient] = None
    source: str = ""  #: where the settings came from, for messages: ``--command-config FILE``

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def describe(self) -> str:
        """The protocol and mechanism in words, with no secret: ``SASL_SSL, SCRAM-SHA-512 as alice``."""
        text = self.protocol
        if self.sasl:
            text += f", {self.mechanism}" + (f" as {self.username}" if self.username else "")
        if self.tls and (self.cert_file or self.cert_pem):
            text += ", client certificate"
        return text


PLAINTEXT = ClientSecurity()


@dataclass(frozen=True)
class Property:
    """One client property: its names (Java's first, where Java has it), whether it holds a secret,
    and what it sets."""

    java: Optional[str]
    librdkafka: Optional[str]
    secret: bool
    doc: str


#: Every property ``--command-config`` understands.  Other ``ssl.*`` and ``sasl.*`` properties are
#: refused (a security setting must never be dropped without a word), except :data:`IGNORED`;
#: the rest of a client's properties (``client.id``, timeouts ...) do not concern advise.
PROPERTIES: Tuple[Property, ...] = (
    Property("security.protocol", "security.protocol", False,
             "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
    Property("sasl.mechanism", "sasl.mechanisms", False,
             "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM"),
    Property("sasl.jaas.config", None, True,
             "PlainLoginModule or ScramLoginModule with username and password; OAuthBearerLoginModule with "
             "clientId, clientSecret and scope; IAMLoginModule"),
    Property(None, "sasl.username", False, "the SASL user"),
    Property(None, "sasl.password", True, "the SASL password"),
    Property("ssl.truststore.location", "ssl.ca.location", False,
             "the CA certificates to trust, PEM (default: the system's)"),
    Property("ssl.truststore.type", None, False, "PEM (a JKS or PKCS12 store must be converted)"),
    Property("ssl.truststore.certificates", "ssl.ca.pem", False, "the CA certificates to trust, as PEM text"),
    Property("ssl.keystore.location", None, False,
             "mutual TLS: the client's private key and certificate chain in one PEM file"),
    Property("ssl.keystore.type", None, False, "PEM (a JKS or PKCS12 store must be converted)"),
    Property("ssl.keystore.certificate.chain", "ssl.certificate.pem", False,
             "mutual TLS: the client's certificate chain, as PEM text"),
    Property("ssl.keystore.key", "ssl.key.pem", True, "mutual TLS: the client's private key, as PEM text"),
    Property(None, "ssl.certificate.location", False, "mutual TLS: the client's certificate chain, PEM"),
    Property(None, "ssl.key.location", False, "mutual TLS: the client's private key, PEM"),
    Property("ssl.key.password", "ssl.key.password", True, "the password of an encrypted private key"),
    Property("ssl.endpoint.identification.algorithm", "ssl.endpoint.identification.algorithm", False,
             "https (default) checks the broker's hostname against its certificate; empty (Java) or none "
             "(librdkafka) does not"),
    Property(None, "enable.ssl.certificate.verification", False,
             "false trusts any certificate (not advised)"),
    Property(None, "ssl.crl.location", False, "a certificate revocation list, PEM"),
    Property("sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.token.endpoint.url", False,
             "OAUTHBEARER: the token endpoint of a client-credentials grant"),
    Property(None, "sasl.oauthbearer.method", False, "oidc"),
    Property(None, "sasl.oauthbearer.client.id", False, "OAUTHBEARER: the client id"),
    Property(None, "sasl.oauthbearer.client.secret", True, "OAUTHBEARER: the client secret"),
    Property(None, "sasl.oauthbearer.scope", False, "OAUTHBEARER: the scope asked for"),
    Property("config.providers", None, False,
             "env, file or directory (Kafka's EnvVarConfigProvider, FileConfigProvider, DirectoryConfigProvider)"),
)

#: Properties that only choose an implementation inside the JVM or librdkafka, or tune a
#: long-lived client: accepted and without effect on advise's short connections.
IGNORED = frozenset({
    "ssl.truststore.password",  # a PEM trust store has none
    "ssl.protocol", "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation", "ssl.provider", "ssl.engine.factory.class",
    "sasl.login.callback.handler.class", "sasl.client.callback.handler.class", "sasl.login.class",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds", "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms",
    "sasl.login.retry.backoff.ms", "sasl.login.retry.backoff.max.ms",
    "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name",
    "enable.sasl.oauthbearer.unsecure.jwt",
})

_SECRET_NAMES = frozenset(n for p in PROPERTIES if p.secret for n in (p.java, p.librdkafka) if n) | {
    "ssl.keystore.password", "ssl.truststore.password"}
_KNOWN = frozenset(n for p in PROPERTIES for n in (p.java, p.librdkafka) if n) | IGNORED | {"ssl.keystore.password"}

_PROVIDER_CLASSES = {
    "org.apache.kafka.common.config.provider.EnvVarConfigProvider": "env",
    "org.apache.kafka.common.config.provider.FileConfigProvider": "file",
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider": "directory",
}
_VARIABLE = re.compile(r"\$\{([^}:]*?):(?:([^}]*?):)?([^}]*?)\}")

_LOGIN_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule": ("OAUTHBEARER",),
    "software.amazon.msk.auth.iam.IAMLoginModule": ("AWS_MSK_IAM",),
}


# -- the properties file -------------------------------------------------------------------------
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> List[Tuple[int, str]]:
    """(first line number, text) of each logical line: a line ending in an odd number of
    backslashes continues on the next, whose leading white space is dropped."""
    out: List[Tuple[int, str]] = []
    pending: Optional[List[str]] = None
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line, start, pending = stripped, number, []
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending.append(line[:-1])
            continue
        pending.append(line)
        out.append((start, "".join(pending)))
        pending = None
    if pending is not None:
        out.append((start, "".join(pending)))
    return out


def _unescape(text: str, where: str) -> str:
    out: List[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        n = text[i + 1]
        if n == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise KcodecError(f"{where}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(n, n))
        i += 2
    return "".join(out)


def parse_properties(text: str, where: str = "properties") -> Dict[str, str]:
    """A Java ``.properties`` text as a dict (``key=value``, ``key: value`` or ``key value``;
    ``#``/``!`` comments; backslash continuations and escapes).  A key given twice keeps its last value."""
    out: Dict[str, str] = {}
    for number, line in _logical_lines(text):
        i = 0
        while i < len(line):
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":") and (i == len(line) or line[i] in " \t\f=:"):
            rest = rest[1:].lstrip(" \t\f")
        out[_unescape(key, f"{where} line {number}")] = _unescape(rest, f"{where} line {number} ({key})")
    return out


def _resolve_variables(props: Dict[str, str], where: str, environ: Mapping[str, str]) -> Dict[str, str]:
    """Each ``${provider:[path:]key}`` replaced by what the provider gives.  ``env`` works without
    a ``config.providers`` line; other providers must be declared as Kafka's tools want."""
    aliases: Dict[str, str] = {"env": "env"}
    declared = props.get("config.providers")
    if declared is not None:
        aliases = {}
        for alias in (a.strip() for a in declared.split(",") if a.strip()):
            cls = props.get(f"config.providers.{alias}.class")
            if cls not in _PROVIDER_CLASSES:
                raise KcodecError(f"{where}: config.providers.{alias}.class must be one of "
                                  f"{', '.join(sorted(_PROVIDER_CLASSES))}")
            aliases[alias] = _PROVIDER_CLASSES[cls]
    cache: Dict[str, Dict[str, str]] = {}

    def value(key: str, match: "re.Match[str]") -> str:
        alias, path, name = match.group(1), match.group(2), match.group(3)
        kind = aliases.get(alias)
        if kind is None:
            raise KcodecError(f"{where}: {key} names config provider {alias!r}, which config.providers does not "
                              "declare")
        if kind == "env":
            if name not in environ:
                raise KcodecError(f"{where}: {key} reads environment variable {name}, which is not set")
            return environ[name]
        if not path:
            raise KcodecError(f"{where}: {key}: a {kind} provider variable is ${{{alias}:PATH:KEY}}")
        if kind == "directory":
            return _read_text(os.path.join(path, name), f"{where}: {key}").rstrip("\n")
        if path not in cache:
            cache[path] = parse_properties(_read_text(path, f"{where}: {key}"), path)
        if name not in cache[path]:
            raise KcodecError(f"{where}: {key} reads key {name!r} of {path}, which has no such key")
        return cache[path][name]

    out = {}
    for key, text in props.items():
        if key.startswith("config.providers"):
            out[key] = text
            continue
        out[key] = _VARIABLE.sub(lambda m, k=key: value(k, m), text)  # type: ignore[misc]
    return out


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise KcodecError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise KcodecError(f"{what}: {path} is not UTF-8 text") from None


# -- sasl.jaas.config ------------------------------------------------------------------------------
@dataclass(frozen=True)
class JaasLogin:
    module: str
    options: Dict[str, str] = field(default_factory=dict)


def parse_jaas(text: str, where: str = "sasl.jaas.config") -> JaasLogin:
    """``LoginModule FLAG key=value ... ;`` as Kafka's ``sasl.jaas.config`` holds it: one module;
    values unquoted or in double quotes with backslash escapes.  Errors never repeat a value."""
    tokens: List[Tuple[str, bool]] = []  # (text, quoted)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=;":
            tokens.append((c, False))
            i += 1
        elif c == '"':
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                    buf.append(_ESCAPES.get(text[j], text[j]))
                else:
                    buf.append(text[j])
                j += 1
            if j >= n:
                raise KcodecError(f"{where}: a quoted value is not closed")
            tokens.append(("".join(buf), True))
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '=;"':
                j += 1
            tokens.append((text[i:j], False))
            i = j
    if len(tokens) < 3 or tokens[0][1] or tokens[1][1]:
        raise KcodecError(f"{where}: expected 'LoginModuleClass required key=\"value\" ... ;'")
    module, flag = tokens[0][0], tokens[1][0]
    if flag not in ("required", "requisite", "sufficient", "optional"):
        raise KcodecError(f"{where}: {module} must be followed by a control flag such as 'required', "
                          f"not {flag!r}")
    options: Dict[str, str] = {}
    k = 2
    while k < len(tokens) and tokens[k] != (";", False):
        if k + 2 >= len(tokens) or tokens[k][1] or tokens[k + 1] != ("=", False) or tokens[k + 2] == (";", False):
            after = f"option {list(options)[-1]!r}" if options else f"{module} {flag}"
            raise KcodecError(f"{where}: expected key=\"value\" after {after}")
        options[tokens[k][0]] = tokens[k + 2][0]
        k += 3
    if k >= len(tokens):
        raise KcodecError(f"{where}: the login module must end with ';'")
    if k + 1 < len(tokens):
        raise KcodecError(f"{where}: holds more than one login module; a client takes exactly one")
    return JaasLogin(module, options)


# -- from properties to ClientSecurity ------------------------------------------------------------
def read_command_config(path: str, environ: Optional[Mapping[str, str]] = None) -> ClientSecurity:
    """The :class:`ClientSecurity` a ``--command-config`` file describes; one-line errors name the
    file and the property, never a secret's value."""
    where = f"--command-config {path}"
    try:
        with open(path, "rb") as f:
            raw = f.read((1 << 20) + 1)
    except OSError as exc:
        raise KcodecError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > 1 << 20:
        raise KcodecError(f"{where}: larger than 1 MiB; a client properties file is a few lines")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        try:  # Java reads .properties as ISO 8859-1 (before Java 9) or UTF-8; take either
            text = raw.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes any bytes
            raise KcodecError(f"{where}: not a text file") from None
    return security_from_properties(parse_properties(text, where), where,
                                    os.environ if environ is None else environ)


def security_from_properties(props: Mapping[str, str], where: str,
                             environ: Optional[Mapping[str, str]] = None) -> ClientSecurity:
    """The :class:`ClientSecurity` of client properties in Java's or librdkafka's names."""
    values = _resolve_variables(dict(props), where, os.environ if environ is None else environ)
    unknown = sorted(k for k in values if k.startswith(("ssl.", "sasl.")) and k not in _KNOWN)
    if unknown:
        raise KcodecError(f"{where}: {', '.join(unknown)}: not supported by kcodec advise (see the operator's "
                          "guide for the properties it takes)")

    def get(*names: str) -> Optional[str]:
        given = [(n, values[n]) for n in names if n in values]
        if len({v for _, v in given}) > 1:
            raise KcodecError(f"{where}: {' and '.join(n for n, _ in given)} disagree; give one")
        return given[0][1] if given else None

    def secret(*names: str) -> Optional[Secret]:
        text = get(*names)
        return None if text is None or text == "" else Secret(text)

    protocol = (get("security.protocol") or "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise KcodecError(f"{where}: security.protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    mechanism_text = get("sasl.mechanism", "sasl.mechanisms")
    mechanism = mechanism_text.strip().upper() if mechanism_text else None
    sec = ClientSecurity(protocol=protocol, source=where)
    sec = _tls_settings(sec, values, get, secret, where)
    sasl = protocol.startswith("SASL_")
    if not sasl:
        if mechanism or "sasl.jaas.config" in values or "sasl.username" in values:
            raise KcodecError(f"{where}: SASL settings are given but security.protocol is {protocol}: "
                              "use SASL_SSL or SASL_PLAINTEXT")
        return sec
    if mechanism is None:
        raise KcodecError(f"{where}: security.protocol {protocol} needs sasl.mechanism (the clients' default, "
                          f"GSSAPI, is not supported: use one of {', '.join(MECHANISMS)})")
    if mechanism not in MECHANISMS:
        raise KcodecError(f"{where}: sasl.mechanism {mechanism} is not supported (use one of "
                          f"{', '.join(MECHANISMS)})")
    jaas = get("sasl.jaas.config")
    login = parse_jaas(jaas, f"{where}: sasl.jaas.config") if jaas else None
    if login is not None:
        if login.module not in _LOGIN_MODULES:
            raise KcodecError(f"{where}: sasl.jaas.config login module {login.module} is not supported (use one of "
                              f"{', '.join(m.rsplit('.', 1)[1] for m in _LOGIN_MODULES)})")
        if mechanism not in _LOGIN_MODULES[login.module]:
            raise KcodecError(f"{where}: sasl.jaas.config has {login.module.rsplit('.', 1)[1]}, which does not "
                              f"serve sasl.mechanism {mechanism}")
    options = login.options if login else {}
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        username = options.get("username", get("sasl.username"))
        password = options.get("password", get("sasl.password"))
        if login is not None and ("sasl.username" in values or "sasl.password" in values):
            raise KcodecError(f"{where}: give the user either in sasl.jaas.config or as sasl.username and "
                              "sasl.password, not both")
        if not username or not password:
            raise KcodecError(f"{where}: sasl.mechanism {mechanism} needs a username and a password "
                              "(sasl.jaas.config's username= and password=, or sasl.username and sasl.password)")
        return replace(sec, mechanism=mechanism, username=username, password=Secret(password))
    if mechanism == "OAUTHBEARER":
        return replace(sec, mechanism=mechanism, oauth=_oauth_client(values, options, get, where))
    if protocol != "SASL_SSL":
        raise KcodecError(f"{where}: sasl.mechanism AWS_MSK_IAM needs security.protocol SASL_SSL")
    return replace(sec, mechanism=mechanism)


def _oauth_client(values: Mapping[str, str], options: Mapping[str, str], get: Callable[..., Optional[str]],
                  where: str) -> OAuthClient:
    method = get("sasl.oauthbearer.method")
    if method is not None and method.lower() != "oidc":
        raise KcodecError(f"{where}: sasl.oauthbearer.method {method!r}: only oidc (a client-credentials grant) "
                          "is supported")
    url = get("sasl.oauthbearer.token.endpoint.url")
    client_id = options.get("clientId", get("sasl.oauthbearer.client.id"))
    client_secret = options.get("clientSecret", values.get("sasl.oauthbearer.client.secret"))
    scope = options.get("scope", get("sasl.oauthbearer.scope"))
    missing = [name for name, v in (("sasl.oauthbearer.token.endpoint.url", url), ("a client id", client_id),
                                    ("a client secret", client_secret)) if not v]
    if missing:
        raise KcodecError(f"{where}: sasl.mechanism OAUTHBEARER needs {', '.join(missing)} (sasl.jaas.config's "
                          "clientId= and clientSecret=, or sasl.oauthbearer.client.id and .client.secret)")
    assert url is not None and client_id is not None and client_secret is not None
    if urllib.parse.urlsplit(url).scheme not in ("https", "http"):
        raise KcodecError(f"{where}: sasl.oauthbearer.token.endpoint.url must be an http(s) URL")
    return OAuthClient(url, client_id, Secret(client_secret), scope or None)


def _store_type(values: Mapping[str, str], prop: str, where: str, path: Optional[str], kind: str) -> None:
    """Refuse a JKS or PKCS12 store (by its declared type, or by its bytes when none is declared, since
    Java then takes JKS) with the commands that convert it to PEM."""
    declared = values.get(prop, "").strip().upper() or None
    if declared not in (None, "PEM", "JKS", "PKCS12"):
        raise KcodecError(f"{where}: {prop} {declared!r}: kcodec advise reads PEM")
    head = b""
    if path is not None:
        try:
            with open(path, "rb") as f:
                head = f.read(64)
        except OSError as exc:
            raise KcodecError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    binary = head[:4] == b"\xfe\xed\xfe\xed" or head[:1] == b"\x30"  # JKS magic, or DER (PKCS12)
    if declared == "PEM" or (declared is None and not binary):
        return
    found = declared or ("JKS" if head[:4] == b"\xfe\xed\xfe\xed" else "PKCS12")
    store = path or "STORE"
    if kind == "trust":
        fix = (f"keytool -exportcert -rfc -keystore {store} -storetype {found} -alias CARoot -file ca.pem, "
               "then ssl.truststore.location=ca.pem and ssl.truststore.type=PEM")
    else:
        fix = (f"keytool -importkeystore -srckeystore {store} -srcstoretype {found} -destkeystore client.p12 "
               "-deststoretype PKCS12, then openssl pkcs12 -in client.p12 -out client.pem -nodes, and "
               "ssl.keystore.location=client.pem with ssl.keystore.type=PEM")
    raise KcodecError(f"{where}: {prop.replace('.type', '.location')} is a {found} store; kcodec advise reads PEM: "
                      f"convert it with {fix}")


def _tls_settings(sec: ClientSecurity, values: Mapping[str, str], get: Callable[..., Optional[str]],
                  secret: Callable[..., Optional[Secret]], where: str) -> ClientSecurity:
    ca_location = get("ssl.truststore.location", "ssl.ca.location")
    ca_file = ca_dir = None
    if ca_location == "probe":  # librdkafka: look for the system's CAs
        ca_location = None
    elif ca_location is not None:
        if os.path.isdir(ca_location):
            ca_dir = ca_location
        else:
            _store_type(values, "ssl.truststore.type", where, ca_location, "trust")
            ca_file = ca_location
    elif "ssl.truststore.type" in values:
        _store_type(values, "ssl.truststore.type", where, None, "trust")
    keystore = values.get("ssl.keystore.location")
    if keystore is not None:
        _store_type(values, "ssl.keystore.type", where, keystore, "key")
        if "ssl.keystore.password" in values:
            raise KcodecError(f"{where}: ssl.keystore.password is not used with a PEM key store: give the "
                              "private key's password as ssl.key.password")
    elif "ssl.keystore.type" in values:
        _store_type(values, "ssl.keystore.type", where, None, "key")
    cert_file = get("ssl.certificate.location")
    if keystore is not None and cert_file is not None:
        raise KcodecError(f"{where}: give ssl.keystore.location or ssl.certificate.location, not both")
    key_file = get("ssl.key.location")
    cert_pem = get("ssl.keystore.certificate.chain", "ssl.certificate.pem")
    key_pem = secret("ssl.keystore.key", "ssl.key.pem")
    if (cert_file or keystore) and cert_pem:
        raise KcodecError(f"{where}: give the client certificate as a file or as PEM text, not both")
    if bool(cert_pem) != bool(key_pem):
        raise KcodecError(f"{where}: a client certificate and its key given as PEM text go together "
                          "(ssl.keystore.certificate.chain with ssl.keystore.key, or ssl.certificate.pem with "
                          "ssl.key.pem)")
    if key_file and not cert_file:
        raise KcodecError(f"{where}: ssl.key.location needs ssl.certificate.location")
    algorithm = get("ssl.endpoint.identification.algorithm")
    if algorithm is not None and algorithm.strip().lower() not in ("", "none", "https"):
        raise KcodecError(f"{where}: ssl.endpoint.identification.algorithm {algorithm!r}: use https, or "
                          "empty (none) to skip the hostname check")
    verify_text = get("enable.ssl.certificate.verification")
    if verify_text is not None and verify_text.strip().lower() not in ("true", "false"):
        raise KcodecError(f"{where}: enable.ssl.certificate.verification must be true or false")
    tls_given = [k for k in values if k.startswith("ssl.") and k not in IGNORED] + \
        (["enable.ssl.certificate.verification"] if verify_text is not None else [])
    if tls_given and not sec.tls:
        raise KcodecError(f"{where}: {tls_given[0]} is given but security.protocol is {sec.protocol}: use SSL or "
                          "SASL_SSL")
    for name, path in (("CA file", ca_file), ("certificate", keystore or cert_file), ("key", key_file),
                       ("CRL", get("ssl.crl.location"))):
        if path is not None and not os.path.isfile(path):
            raise KcodecError(f"{where}: the {name} {path} does not exist")
    return replace(sec, ca_file=ca_file, ca_dir=ca_dir, ca_pem=get("ssl.truststore.certificates", "ssl.ca.pem"),
                   cert_file=keystore or cert_file, key_file=key_file, cert_pem=cert_pem, key_pem=key_pem,
                   key_password=secret("ssl.key.password"), crl_file=get("ssl.crl.location"),
                   check_hostname=algorithm is None or algorithm.strip().lower() == "https",
                   verify=verify_text is None or verify_text.strip().lower() == "true")


# -- what the connections take ------------------------------------------------------------------
def ssl_context(sec: ClientSecurity) -> ssl.SSLContext:
    """The TLS context of every connection: kcodec's own handshake and kafka-python's use the same."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    where = sec.source or "TLS settings"
    try:
        if sec.ca_file or sec.ca_dir or sec.ca_pem:
            if sec.ca_file or sec.ca_dir:
                ctx.load_verify_locations(cafile=sec.ca_file, capath=sec.ca_dir)
            if sec.ca_pem:
                ctx.load_verify_locations(cadata=sec.ca_pem)
        else:
            ctx.load_default_certs()
        if sec.crl_file:
            ctx.load_verify_locations(cafile=sec.crl_file)
            ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ClusterError(f"{where}: the CA certificates cannot be loaded: {_ssl_reason(exc)}") from None
    if sec.cert_file or sec.cert_pem:
        _load_client_certificate(ctx, sec, where)
    ctx.check_hostname = sec.check_hostname and sec.verify
    if not sec.verify:
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _load_client_certificate(ctx: ssl.SSLContext, sec: ClientSecurity, where: str) -> None:
    password = sec.key_password.reveal() if sec.key_password else None
    folder = None
    try:
        if sec.cert_pem is not None and sec.key_pem is not None:
            # The ssl module loads a key only from a file: a private folder, removed at once.
            folder = tempfile.mkdtemp(prefix="kcodec-tls-")
            path = os.path.join(folder, "client.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(sec.key_pem.reveal().strip() + "\n" + sec.cert_pem.strip() + "\n")
            ctx.load_cert_chain(path, password=password)
        else:
            assert sec.cert_file is not None
            ctx.load_cert_chain(sec.cert_file, sec.key_file, password=password)
    except (ssl.SSLError, OSError, ValueError) as exc:
        which = "the client certificate given as PEM text" if sec.cert_pem else f"client certificate {sec.cert_file}"
        hint = " (is ssl.key.password right?)" if sec.key_password or "password" in str(exc).lower() else ""
        raise ClusterError(f"{where}: {which} and its key cannot be loaded: {_ssl_reason(exc)}{hint}") from None
    finally:
        if folder is not None:
            for name in os.listdir(folder):
                os.unlink(os.path.join(folder, name))
            os.rmdir(folder)


def client_args(sec: ClientSecurity) -> Dict[str, Any]:
    """kafka-python's connection arguments for ``sec`` (secrets unwrapped: hand them to it only)."""
    if sec.protocol == "PLAINTEXT":
        return {}
    args: Dict[str, Any] = {"security_protocol": sec.protocol}
    if sec.tls:
        args["ssl_context"] = ssl_context(sec)
        args["ssl_check_hostname"] = sec.check_hostname and sec.verify
    if sec.sasl:
        args["sasl_mechanism"] = sec.mechanism
        if sec.username is not None:
            args["sasl_plain_username"] = sec.username
        if sec.password is not None:
            args["sasl_plain_password"] = sec.password.reveal()
        if sec.oauth is not None:
            args["sasl_oauth_token_provider"] = _token_provider(sec.oauth, sec.source)
    return args


def fetch_token(oauth: OAuthClient, where: str, timeout_s: float = 10.0) -> Tuple[str, float]:
    """(access token, seconds it lives) from the token endpoint: an OAuth 2 client-credentials grant
    (RFC 6749 4.4) with the client's id and secret in HTTP Basic authentication, as Kafka's
    OAuthBearerLoginCallbackHandler sends it."""
    form = {"grant_type": "client_credentials"}
    if oauth.scope:
        form["scope"] = oauth.scope
    basic = base64.b64encode(f"{urllib.parse.quote(oauth.client_id, safe='')}:"
                             f"{urllib.parse.quote(oauth.client_secret.reveal(), safe='')}".encode()).decode()
    request = urllib.request.Request(oauth.token_url, data=urllib.parse.urlencode(form).encode(), method="POST",
                                     headers={"Authorization": f"Basic {basic}", "Accept": "application/json",
                                              "Content-Type": "application/x-www-form-urlencoded"})
    what = f"{where}: OAuth token from {oauth.token_url}"
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - the operator's URL
            body = answer.read(1 << 20)
    except urllib.error.HTTPError as exc:
        raise ClusterError(f"{what}: HTTP {exc.code} {exc.reason} (are the client id and secret right?)") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ClusterError(f"{what}: {' '.join(str(reason).split())}") from None
    try:
        data = json.loads(body)
        token = data["access_token"]
        if not isinstance(token, str) or not token:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise ClusterError(f"{what}: the answer holds no access_token") from None
    lifetime = data.get("expires_in")
    return token, float(lifetime) if isinstance(lifetime, (int, float)) and lifetime > 0 else 3600.0


def _token_provider(oauth: OAuthClient, where: str) -> Any:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class ClientCredentials(AbstractTokenProvider):
        """A token from the endpoint, fetched again when less than a tenth of its life is left."""

        def __init__(self) -> None:
            self._token: Optional[str] = None
            self._renew_at = 0.0

        def token(self) -> str:
            now = time.monotonic()
            if self._token is None or now >= self._renew_at:
                self._token, lifetime = fetch_token(oauth, where)
                self._renew_at = now + 0.9 * lifetime
            return self._token

    return ClientCredentials()


# -- kcodec's own first connection: one line for each way it can fail ------------------------------
def check_connection(host: str, port: int, sec: ClientSecurity, timeout_s: float, bootstrap: str) -> None:
    """Open one connection to ``host:port`` as kafka-python will, and raise ClusterError with one
    line naming the broker and what failed: TLS (the verification failure, a hostname mismatch, a
    refused client certificate) and SASL (a mechanism not offered, authentication failed)."""
    if sec.protocol == "PLAINTEXT":
        return
    at = f"broker {host}:{port}" + (f" (bootstrap {bootstrap})" if bootstrap != f"{host}:{port}" else "")
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as exc:
        raise ClusterError(f"cannot reach Kafka at {at}: {exc.strerror or exc}") from None
    try:
        if sec.tls:
            sock = _tls_handshake(sock, host, sec, at, timeout_s)
        conversation = _Conversation(sock, at, deadline, sec.tls and not (sec.cert_file or sec.cert_pem))
        versions = conversation.api_versions()
        if sec.sasl and 36 in versions and versions[36][1] >= 0 and 17 in versions:
            _authenticate(conversation, host, sec, at)
    except struct.error:
        raise ClusterError(f"{at}: an answer to the connection check is not Kafka's (truncated)") from None
    finally:
        try:
            sock.close()
        except OSError:
            pass


def _ssl_reason(exc: BaseException) -> str:
    message = getattr(exc, "verify_message", None) or getattr(exc, "reason", None) or getattr(exc, "strerror", None)
    text = str(message) if message else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def _tls_handshake(sock: socket.socket, host: str, sec: ClientSecurity, at: str, timeout_s: float) -> ssl.SSLSocket:
    ctx = ssl_context(sec)
    trusted = (f"trusting {sec.ca_file or sec.ca_dir}" if sec.ca_file or sec.ca_dir
               else "trusting the CA certificates given as PEM text" if sec.ca_pem else "trusting the system's CAs")
    try:
        tls = ctx.wrap_socket(sock, server_hostname=host.rstrip("."), do_handshake_on_connect=False)
        tls.settimeout(timeout_s)
        tls.do_handshake()
        if not (sec.cert_file or sec.cert_pem) and tls.version() == "TLSv1.3":
            _await_refusal(tls, min(_REFUSAL_WAIT_S, timeout_s), at)
        return tls
    except ssl.SSLCertVerificationError as exc:
        reason = _ssl_reason(exc)
        if "mismatch" in reason.lower():
            raise ClusterError(f"TLS to {at}: hostname mismatch: {reason} (connect by a name the certificate "
                               "holds)") from None
        raise ClusterError(f"TLS to {at}: the broker's certificate is not trusted: {reason} ({trusted})") from None
    except ssl.SSLError as exc:
        reason = _ssl_reason(exc)
        if "WRONG_VERSION_NUMBER" in reason or "RECORD_LAYER_FAILURE" in reason:
            raise ClusterError(f"TLS to {at}: the broker does not answer in TLS ({reason}): is this its TLS "
                               "listener, and security.protocol right?") from None
        raise ClusterError(f"TLS to {at}: the handshake failed: {_client_certificate_hint(reason)}") from None
    except (socket.timeout, TimeoutError):
        raise ClusterError(f"TLS to {at}: no TLS handshake within {timeout_s:g} s: is this the broker's TLS "
                           "listener?") from None
    except OSError as exc:
        raise ClusterError(f"TLS to {at}: the broker closed the connection during the handshake "
                           f"({exc.strerror or _ssl_reason(exc)}): is this its TLS listener?") from None


def _await_refusal(tls: ssl.SSLSocket, wait_s: float, at: str) -> None:
    """In TLS 1.3 a server refuses a client without a certificate only after the client's handshake
    has ended, by an alert.  Wait a moment for it before writing: a request written first may reach
    a server that has already closed, whose reset would then discard the alert unread."""
    tls.settimeout(wait_s)
    try:
        tls.recv(1)  # reads the session tickets; the broker sends nothing else before a request
    except (socket.timeout, TimeoutError, ssl.SSLWantReadError):
        pass
    except ssl.SSLError as exc:
        raise ClusterError(f"TLS to {at}: {_client_certificate_hint(_ssl_reason(exc))}") from None


def _client_certificate_hint(reason: str) -> str:
    upper = reason.upper()
    if "CERTIFICATE_REQUIRED" in upper or ("HANDSHAKE_FAILURE" in upper and "ALERT" in upper):
        return f"{reason}: the broker asks for a client certificate (ssl.keystore.location)"
    if any(s in upper for s in ("BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN", "ACCESS_DENIED")):
        return f"{reason}: the broker refused the client certificate"
    return reason


class _Conversation:
    """Kafka requests on the checking connection: header v1, non-flexible bodies only."""

    def __init__(self, sock: socket.socket, at: str, deadline: float, tls_without_certificate: bool) -> None:
        self.sock, self.at, self.deadline = sock, at, deadline
        self.tls_without_certificate = tls_without_certificate
        self.correlation = 0

    def request(self, api_key: int, version: int, body: bytes, what: str) -> memoryview:
        self.correlation += 1
        client = _CLIENT_ID.encode()
        header = struct.pack(">hhih", api_key, version, self.correlation, len(client)) + client
        frame = struct.pack(">i", len(header) + len(body)) + header + body
        try:
            self.sock.settimeout(max(0.01, self.deadline - time.monotonic()))
            self.sock.sendall(frame)
            size = struct.unpack(">i", self._read(4, what))[0]
            if not 4 <= size <= 1 << 24:
                raise ClusterError(f"{what} at {self.at}: the answer is not Kafka's (a frame of {size} bytes)")
            answer = self._read(size, what)
        except (ssl.SSLEOFError, ConnectionResetError):
            raise _Closed(what) from None
        except ssl.SSLError as exc:
            raise ClusterError(f"TLS to {self.at}: {_client_certificate_hint(_ssl_reason(exc))}") from None
        except (socket.timeout, TimeoutError):
            raise ClusterError(f"{what} at {self.at}: no answer before the timeout") from None
        except OSError as exc:
            raise ClusterError(f"{what} at {self.at}: the connection failed ({exc.strerror or exc})") from None
        if struct.unpack_from(">i", answer)[0] != self.correlation:
            raise ClusterError(f"{what} at {self.at}: the answer is not Kafka's (wrong correlation id)")
        return memoryview(answer)[4:]

    def _read(self, n: int, what: str) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise _Closed(what)
            out += chunk
        return bytes(out)

    def api_versions(self) -> Dict[int, Tuple[int, int]]:
        """ApiVersions v0: each API key's (min, max) version."""
        try:
            body = self.request(18, 0, b"", "ApiVersions")
        except _Closed:
            if self.tls_without_certificate:
                hint = " (does it ask for a client certificate? give ssl.keystore.location)"
            elif isinstance(self.sock, ssl.SSLSocket):
                hint = ""
            else:
                hint = " (is this a TLS listener? then security.protocol is SSL or SASL_SSL)"
            raise ClusterError(f"{self.at} closed the connection at the first request{hint}") from None
        error, count = struct.unpack_from(">hi", body, 0)
        if error:
            raise ClusterError(f"ApiVersions at {self.at}: error code {error}")
        out = {}
        for i in range(max(0, count)):
            key, low, high = struct.unpack_from(">hhh", body, 6 + 6 * i)
            out[key] = (low, high)
        return out


class _Closed(Exception):
    """The broker closed (or reset) the connection where an answer was due."""


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _step(action: Callable[[], Any], who: str, at: str) -> Any:
    """One step of kafka-python's mechanism; its failure (a configuration it refuses, AWS credentials
    not found, botocore missing) as one line."""
    try:
        return action()
    except ClusterError:
        raise
    except Exception as exc:
        raise ClusterError(f"SASL {who} at {at}: {' '.join(str(exc).split()) or type(exc).__name__}") from None


def _authenticate(conversation: _Conversation, host: str, sec: ClientSecurity, at: str) -> None:
    """SaslHandshake v1, then SaslAuthenticate v0 through kafka-python's own mechanism."""
    mechanism = sec.mechanism or ""
    try:
        body = conversation.request(17, 1, _string(mechanism), "SaslHandshake")
    except _Closed:
        raise ClusterError(f"SASL at {at}: the broker closed the connection when asked for mechanism {mechanism} "
                           "(it does not offer it, or takes no SASL on this listener)") from None
    error, count = struct.unpack_from(">hi", body, 0)
    offered, pos = [], 6
    for _ in range(max(0, count)):
        (n,) = struct.unpack_from(">h", body, pos)
        offered.append(bytes(body[pos + 2:pos + 2 + n]).decode(errors="replace"))
        pos += 2 + max(0, n)
    if error == 33 or (error == 0 and mechanism not in offered):
        raise ClusterError(f"SASL at {at}: the broker does not offer mechanism {mechanism}"
                           + (f" (it offers {', '.join(offered)})" if offered else ""))
    if error:
        raise ClusterError(f"SASL handshake at {at}: error code {error}")
    from kafka.net.sasl import get_sasl_mechanism

    who = f"{mechanism}" + (f" as user {sec.username!r}" if sec.username else "")
    client = _step(lambda: get_sasl_mechanism(mechanism)(host=host, **client_args(sec)), who, at)
    steps = 0
    while not client.is_done():
        steps += 1
        if steps > 20:
            raise ClusterError(f"SASL {who} at {at}: the exchange did not end")
        token = _step(client.auth_bytes, who, at)
        try:
            body = conversation.request(36, 0, struct.pack(">i", len(token)) + token, "SaslAuthenticate")
        except _Closed:
            raise ClusterError(f"SASL authentication failed at {at}: {who}: the broker closed the "
                               "connection") from None
        error, n = struct.unpack_from(">hh", body, 0)
        message = bytes(body[4:4 + n]).decode(errors="replace") if n > 0 else ""
        pos = 4 + max(0, n)
        (size,) = struct.unpack_from(">i", body, pos)
        server = bytes(body[pos + 4:pos + 4 + max(0, size)])
        if error:
            detail = " ".join(message.split()) or f"error code {error}"
            raise ClusterError(f"SASL authentication failed at {at}: {who}: {detail}")
        if mechanism.startswith("SCRAM-") and server.startswith(b"e="):
            raise ClusterError(f"SASL authentication failed at {at}: {who}: the broker answered "
                               f"{server[2:].decode(errors='replace')!r}")
        try:
            client.receive(server)
        except Exception:
            raise ClusterError(f"SASL authentication failed at {at}: {who}: the broker's answer does not prove it "
                               "knows this password") from None
        if mechanism == "OAUTHBEARER" and server:
            raise ClusterError(f"SASL authentication failed at {at}: {who}: the broker refused the token: "
                               f"{' '.join(server.decode(errors='replace').split())}")
    if not client.is_authenticated():
        raise ClusterError(f"SASL authentication failed at {at}: {who}")


# -- authorization --------------------------------------------------------------------------------
_DENIED = {29: "topic", 30: "group", 31: "cluster", 53: "transactional id", 87: "delegation token"}


def denied(code: int, operation: str, resource: str, at: str) -> Optional[str]:
    """One line for an ACL refusal (Kafka's *_AUTHORIZATION_FAILED codes), naming the operation and
    the resource; None for any other code."""
    kind = _DENIED.get(code)
    if kind is None:
        return None
    if kind == "cluster":
        resource = "the cluster"
    return f"ACL denied at {at}: {operation} on {resource} is not allowed for this principal"
