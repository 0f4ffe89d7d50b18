"""The credentials of compose.yaml: a password file that never enters the repository.

With ``exporter.credentials`` the stack authenticates to the monitor. The operator creates, next
to ``compose.yaml`` (``secrets/`` is git-ignored):

* ``secrets/m3mon_password``: the password (one line), mounted as a compose secret at
  ``credentials.password_file`` into Prometheus, Alertmanager and every vLLM / simulator service;
* ``secrets/web-config.yml``: the monitor's exporter-toolkit web config with the bcrypt hash of
  that password (``python -m monitor.web --user NAME --password-file secrets/m3mon_password``),
  mounted into the monitor at :data:`MONITOR_SECRETS`;
* with TLS (``credentials.ca_file`` set): ``secrets/monitor.crt`` and ``secrets/monitor.key``
  (the web config names them ``cert_file: monitor.crt``, ``key_file: monitor.key``, relative to
  itself) and ``secrets/ca.pem``, the CA the clients trust, mounted at ``credentials.ca_file``.

Compose bind-mounts each secret file with its host owner and mode, so the files must be readable
by the containers' users (``chmod 0644``) while the folder keeps other host users out
(``chmod 0700 secrets``).

vLLM reads its OTLP headers from ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` only, so the span
exporters start through a small shell entrypoint that builds ``Authorization: Basic …`` from the
password file and then ``exec``\\ s the real command; the password never appears in the file or
in the environment compose shows.
"""

from __future__ import annotations

from typing import Any, Final

from monitor.model import Model

MONITOR_SECRETS: Final = "/etc/m3mon/secrets"
WEB_CONFIG: Final = "web-config.yml"
PASSWORD_SECRET: Final = "m3mon_password"
CA_SECRET: Final = "m3mon_ca"
#: Secret name -> file under secrets/ (the monitor's own files mount into MONITOR_SECRETS).
MONITOR_FILES: Final = {
    "m3mon_web_config": WEB_CONFIG,
    "m3mon_tls_cert": "monitor.crt",
    "m3mon_tls_key": "monitor.key",
}
#: Sets the OTLP Authorization header from the password file, then runs the command. ``$$`` is
#: compose's escape for a literal ``$``; the header value is URL-encoded as the OTLP spec asks.
AUTH_ENTRYPOINT: Final = (
    'AUTH=$$(printf "%s:%s" "$$M3MON_USERNAME" "$$(cat "$$M3MON_PASSWORD_FILE")" | base64 | tr -d "\\n") '
    '&& export OTEL_EXPORTER_OTLP_TRACES_HEADERS="Authorization=Basic%20$$AUTH" && exec "$$@"'
)


def secrets_section(model: Model) -> dict[str, Any]:
    """compose.yaml's top-level ``secrets`` (empty without credentials)."""
    creds = model.credentials
    if creds is None:
        return {}
    secrets = {PASSWORD_SECRET: {"file": f"./secrets/{PASSWORD_SECRET}"}}
    for name, file in _monitor_files(model).items():
        secrets[name] = {"file": f"./secrets/{file}"}
    if creds.ca_file:
        secrets[CA_SECRET] = {"file": "./secrets/ca.pem"}
    return {"secrets": secrets}


def _monitor_files(model: Model) -> dict[str, str]:
    tls = model.credentials is not None and model.credentials.ca_file is not None
    return {name: file for name, file in MONITOR_FILES.items() if tls or file == WEB_CONFIG}


def monitor_secrets(model: Model) -> dict[str, Any]:
    """The monitor's ``secrets``: its web config (and TLS certificate and key) in MONITOR_SECRETS."""
    files = _monitor_files(model) if model.credentials is not None else {}
    mounts = [{"source": name, "target": f"{MONITOR_SECRETS}/{file}"} for name, file in files.items()]
    return {"secrets": mounts} if mounts else {}


def client_secrets(model: Model) -> dict[str, Any]:
    """A client service's ``secrets``: the password (and CA) at the paths the generated configs name."""
    creds = model.credentials
    if creds is None:
        return {}
    mounts = [{"source": PASSWORD_SECRET, "target": creds.password_file}]
    if creds.ca_file:
        mounts.append({"source": CA_SECRET, "target": creds.ca_file})
    return {"secrets": mounts}


def otlp_exporter(
    model: Model, command: list[str], plain: list[str] | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """``environment``, ``command`` (and ``entrypoint``, ``secrets``) of a service exporting spans
    to the monitor over OTLP/HTTP protobuf. Without credentials it runs ``plain`` (default
    ``command``) as is; with them, :data:`AUTH_ENTRYPOINT` runs ``command``."""
    environment = {**(env or {}), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}
    creds = model.credentials
    if creds is None:
        return {"environment": environment, "command": command if plain is None else plain}
    environment |= {"M3MON_USERNAME": creds.username, "M3MON_PASSWORD_FILE": creds.password_file}
    if creds.ca_file:
        environment["OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"] = creds.ca_file
    entrypoint = ["/bin/sh", "-c", AUTH_ENTRYPOINT, "sh"]
    return {"environment": environment, "entrypoint": entrypoint, "command": command, **client_secrets(model)}
