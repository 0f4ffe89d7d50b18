"""The web configuration file, in the format of the Prometheus exporter-toolkit.

``m3mon run --web.config.file FILE`` (or ``exporter.web_config_file``) reads the same file a
node_exporter or Prometheus takes::

    tls_server_config:
      cert_file: monitor.crt          # relative paths are relative to this file, as in the toolkit
      key_file: monitor.key
      client_auth_type: RequireAndVerifyClientCert   # optional, with client_ca_file
      client_ca_file: clients-ca.crt
      min_version: TLS12              # optional (default TLS12), max_version too
    basic_auth_users:
      prometheus: $2y$10$...          # bcrypt hashes: python -m monitor.web --user NAME --password-file FILE

Keys the toolkit knows that m3mon does not implement (``cipher_suites``, ``client_allowed_sans``,
``http_server_config``...) are refused by name rather than ignored, and so are the client-auth
types Python's ``ssl`` cannot express (requesting a certificate without verifying it). Every
problem is a :class:`~monitor.errors.ConfigError` naming the file and the key.
"""

from __future__ import annotations

import ipaddress
import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from monitor.errors import ConfigError
from monitor.web.messages import field_message

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
#: exporter-toolkit keys m3mon refuses by name (rather than silently ignoring them).
_NOT_IMPLEMENTED = {
    (): {"http_server_config", "rate_limit"},
    ("tls_server_config",): {"cert", "key", "client_ca", "client_allowed_sans", "cipher_suites",
                             "curve_preferences", "prefer_server_cipher_suites"},
}  # fmt: skip
_BCRYPT = re.compile(r"^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$")


class _TLSSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    cert_file: str
    key_file: str
    client_auth_type: str = "NoClientCert"
    client_ca_file: str | None = None
    min_version: str = "TLS12"
    max_version: str | None = None

    @field_validator("client_auth_type")
    @classmethod
    def _auth_type(cls, value: str) -> str:
        if value in ("RequestClientCert", "RequireAnyClientCert"):
            raise ValueError(
                f"{value} is not supported: Python's ssl cannot ask for a client certificate without "
                "verifying it; use VerifyClientCertIfGiven or RequireAndVerifyClientCert"
            )
        if value not in CLIENT_AUTH:
            raise ValueError(f"expected one of {', '.join(CLIENT_AUTH)}, got {value!r}")
        return value

    @field_validator("min_version", "max_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and value not in TLS_VERSIONS:
            raise ValueError(f"expected one of {', '.join(TLS_VERSIONS)}, got {value!r}")
        return value


class _WebSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tls_server_config: _TLSSpec | None = None
    basic_auth_users: dict[str, str] | None = None

    @field_validator("basic_auth_users")
    @classmethod
    def _users(cls, users: dict[str, str] | None) -> dict[str, str] | None:
        for user, hashed in (users or {}).items():
            if not user or ":" in user:
                raise ValueError(f"user name {user!r} must be non-empty and hold no ':'")
            if not _BCRYPT.match(str(hashed)):
                raise ValueError(f"{user}: expected a bcrypt hash ($2y$10$...), not a plain password")
        return users


@dataclass(frozen=True)
class TLSSettings:
    """What uvicorn needs to serve TLS as the file says."""

    cert_file: Path
    key_file: Path
    cert_reqs: int
    ca_file: Path | None
    min_version: ssl.TLSVersion
    max_version: ssl.TLSVersion | None

    def uvicorn_kwargs(self) -> dict[str, Any]:
        return {
            "ssl_certfile": str(self.cert_file),
            "ssl_keyfile": str(self.key_file),
            "ssl_cert_reqs": self.cert_reqs,
            "ssl_ca_certs": str(self.ca_file) if self.ca_file else None,
        }

    def restrict(self, context: ssl.SSLContext) -> None:
        """Apply the protocol versions to the context uvicorn built."""
        context.minimum_version = self.min_version
        if self.max_version is not None:
            context.maximum_version = self.max_version


@dataclass(frozen=True)
class WebConfig:
    """A loaded web config: TLS settings (or None) and bcrypt hashes by user."""

    path: str
    tls: TLSSettings | None
    users: tuple[tuple[str, str], ...]

    @property
    def authenticates(self) -> bool:
        """True when every request must prove who sent it (basic auth or a verified client cert)."""
        return bool(self.users) or (self.tls is not None and self.tls.cert_reqs == ssl.CERT_REQUIRED)


_WORDS = {
    "extra_forbidden": "unknown key (not part of the exporter-toolkit web config)",
    "missing": "required key is missing",
}


def _fail(path: object, key: str, message: str) -> NoReturn:
    raise ConfigError([f"{path}: {key}: {message}"])


def _problems(path: str, exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = _WORDS.get(str(err["type"])) or field_message(err)
        out.append(f"{path}: {where}: {msg}")
    return out


def _not_implemented(path: str, data: dict[str, Any]) -> list[str]:
    out = []
    for where, keys in _NOT_IMPLEMENTED.items():
        node: Any = data
        for part in where:
            node = node.get(part) if isinstance(node, dict) else None
        for key in sorted(keys & set(node or {}) if isinstance(node, dict) else ()):
            name = ".".join((*where, key))
            out.append(f"{path}: {name}: an exporter-toolkit setting m3mon does not implement; remove it")
    return out


def _tls(path: Path, spec: _TLSSpec) -> TLSSettings:
    def rel(name: str) -> Path:
        p = Path(name)
        return p if p.is_absolute() else path.parent / p

    if spec.client_ca_file is None and spec.client_auth_type != "NoClientCert":
        _fail(path, "tls_server_config.client_ca_file", f"{spec.client_auth_type} needs a CA file")
    if spec.client_ca_file is not None and spec.client_auth_type == "NoClientCert":
        policy = "VerifyClientCertIfGiven or RequireAndVerifyClientCert"
        _fail(
            path, "tls_server_config.client_auth_type", f"client_ca_file is set without a policy ({policy})"
        )
    tls = TLSSettings(
        rel(spec.cert_file),
        rel(spec.key_file),
        CLIENT_AUTH[spec.client_auth_type],
        rel(spec.client_ca_file) if spec.client_ca_file else None,
        TLS_VERSIONS[spec.min_version],
        TLS_VERSIONS[spec.max_version] if spec.max_version else None,
    )
    _check_loadable(path, tls)
    return tls


def _check_loadable(path: Path, tls: TLSSettings) -> None:
    """Load the certificate, key and CA once now, so a bad file is a config error, not a crash later."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        _fail(path, "tls_server_config.cert_file", f"cannot load {tls.cert_file} with {tls.key_file}: {exc}")
    if tls.ca_file is not None:
        try:
            context.load_verify_locations(tls.ca_file)
        except (OSError, ssl.SSLError) as exc:
            _fail(path, "tls_server_config.client_ca_file", f"cannot load {tls.ca_file}: {exc}")


def load_web_config(path: str | Path) -> WebConfig:
    """Read and check a web config file; :class:`ConfigError` naming the file and key when it is bad."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError([f"{p}: cannot read the web config: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{p}: not UTF-8 text: byte {exc.start} cannot be decoded"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"{p}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from None
    if not isinstance(data, dict):
        raise ConfigError([f"{p}: expected a mapping (tls_server_config, basic_auth_users)"])
    problems = _not_implemented(str(p), data)
    if problems:
        raise ConfigError(problems)
    try:
        spec = _WebSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_problems(str(p), exc)) from None
    tls = _tls(p, spec.tls_server_config) if spec.tls_server_config else None
    return WebConfig(str(p), tls, tuple(sorted((spec.basic_auth_users or {}).items())))


def is_loopback(listen: str) -> bool:
    """True when ``HOST:PORT`` binds a loopback address only."""
    host = listen.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(listen: str, web: WebConfig | None, source: str) -> None:
    """Refuse to serve beyond this host without authentication (ConfigError naming the field)."""
    if is_loopback(listen):
        return
    if web is None:
        why = f"{listen} is not a loopback address; serving beyond this host needs a web config with "
        _fail(source, "exporter.listen", why + "basic_auth_users (exporter.web_config_file or "
              "--web.config.file); bind 127.0.0.1 otherwise")  # fmt: skip
    elif not web.authenticates:
        _fail(web.path, "basic_auth_users", f"exporter.listen {listen} is not a loopback address, so the web "
              "config must authenticate clients (basic_auth_users, or client_auth_type "
              "RequireAndVerifyClientCert)")  # fmt: skip
