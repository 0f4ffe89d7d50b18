"""The monitor's own objects: Deployment, Service and the PersistentVolumeClaim of its SQLite store.

One replica (``Recreate``: a SQLite file has one writer). ``m3mon run -c /etc/m3mon/config/monitor.yaml
--upgrade --listen 0.0.0.0:<port>`` serves the exporter, the Alertmanager receiver and the OTLP
trace receiver on the port of ``exporter.listen``; the liveness probe asks ``/-/healthy`` and the
readiness probe ``/-/ready`` on it. With ``exporter.credentials`` every path needs basic auth,
which an ``httpGet`` probe cannot send from a Secret: the probes then run a short Python request
with the client password mounted from the ``m3mon-client`` Secret.

Secrets are referenced, never written: ``M3MON_STORAGE_URL`` from ``m3mon-env`` key ``url``
(a PostgreSQL URL; optional with SQLite), every variable the config names (``api_key_env``,
``smtp.username_env``/``password_env``) from the key of that name in ``m3mon-env``, and the web
config from ``m3mon-web``.
"""

from __future__ import annotations

from typing import Any

from monitor.generate.compose_secrets import MONITOR_SECRETS, WEB_CONFIG
from monitor.generate.kubernetes.common import (
    CONFIG_DIR,
    CONFIG_FILE,
    DATA_DIR,
    NAME,
    OTLP_PORT,
    PORT_HTTP,
    PORT_OTLP,
    SECRET_CLIENT,
    SECRET_ENV,
    SECRET_WEB,
    STORAGE_URL_KEY,
    Options,
    exporter_port,
    meta,
    monitor_labels,
    monitor_scheme,
    part_of,
)
from monitor.model import STORAGE_URL_ENV, Model

CONFIG_MAP = f"{NAME}-config"
#: The generated runbooks (one key per alert), mounted beside the config.
RUNBOOKS_MAP = f"{NAME}-runbooks"
RUNBOOKS_DIR = "/etc/m3mon/runbooks"
PVC = f"{NAME}-data"
PVC_SIZE = "10Gi"
#: Where the probes read the client password (with exporter.credentials).
PROBE_SECRET_DIR = "/etc/m3mon/client"
UID = 10001
_PROBE = (
    "import base64,ssl,sys,urllib.request as u; r=u.Request(sys.argv[1]); "
    "p=open(sys.argv[3]).read().strip(); "
    "r.add_header('Authorization','Basic '+base64.b64encode((sys.argv[2]+':'+p).encode()).decode()); "
    "c=ssl._create_unverified_context(); sys.exit(u.urlopen(r,timeout=4,context=c).status!=200)"
)


def sqlite(model: Model) -> bool:
    return model.storage.url.startswith("sqlite")


def env_names(model: Model) -> list[str]:
    """Every environment variable the configuration names, each read from ``m3mon-env``."""
    names = [e.api_key_env for e in model.endpoints if e.api_key_env]
    names += [n for n in (model.report.smtp.username_env, model.report.smtp.password_env) if n]
    return list(dict.fromkeys(names))


def _env(model: Model) -> list[dict[str, Any]]:
    def ref(var: str, key: str, optional: bool) -> dict[str, Any]:
        return {
            "name": var,
            "valueFrom": {"secretKeyRef": {"name": SECRET_ENV, "key": key, "optional": optional}},
        }

    storage = ref(STORAGE_URL_ENV, STORAGE_URL_KEY, sqlite(model))
    # the pod runs as UID, not the image's user: caches (matplotlib's) go to the data volume
    home = {"name": "HOME", "value": DATA_DIR}
    return [home, storage, *(ref(n, n, False) for n in env_names(model))]


def _probe(model: Model, path: str, period: int, failures: int) -> dict[str, Any]:
    timing = {"periodSeconds": period, "timeoutSeconds": 5, "failureThreshold": failures}
    creds = model.credentials
    if creds is None:
        return {
            "httpGet": {"path": path, "port": PORT_HTTP, "scheme": monitor_scheme(model).upper()},
            **timing,
        }
    url = f"{monitor_scheme(model)}://127.0.0.1:{exporter_port(model)}{path}"
    command = ["python3", "-c", _PROBE, url, creds.username, f"{PROBE_SECRET_DIR}/password"]
    return {"exec": {"command": command}, **timing}


def _volumes(model: Model) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data: dict[str, Any] = (
        {"persistentVolumeClaim": {"claimName": PVC}} if sqlite(model) else {"emptyDir": {}}
    )
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": CONFIG_MAP}},
        {"name": "runbooks", "configMap": {"name": RUNBOOKS_MAP}},
        {"name": "data", **data},
    ]
    mounts: list[dict[str, Any]] = [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
              {"name": "runbooks", "mountPath": RUNBOOKS_DIR, "readOnly": True},
              {"name": "data", "mountPath": DATA_DIR}]  # fmt: skip
    if model.credentials is not None:
        volumes += [{"name": "web", "secret": {"secretName": SECRET_WEB}},
                    {"name": "client", "secret": {"secretName": SECRET_CLIENT, "items": [
                        {"key": "password", "path": "password"}]}}]  # fmt: skip
        mounts += [{"name": "web", "mountPath": MONITOR_SECRETS, "readOnly": True},
                   {"name": "client", "mountPath": PROBE_SECRET_DIR, "readOnly": True}]  # fmt: skip
    return volumes, mounts


def _container(model: Model, options: Options) -> dict[str, Any]:
    args = ["run", "-c", CONFIG_FILE, "--upgrade", "--listen", f"0.0.0.0:{exporter_port(model)}"]
    if model.credentials is not None:
        args += ["--web.config.file", f"{MONITOR_SECRETS}/{WEB_CONFIG}"]
    return {
        "name": NAME,
        "image": options.image,
        "command": ["m3mon"],
        "args": args,
        "workingDir": DATA_DIR,
        "ports": [{"name": PORT_HTTP, "containerPort": exporter_port(model), "protocol": "TCP"}],
        "env": _env(model),
        "livenessProbe": _probe(model, "/-/healthy", 20, 3),
        "readinessProbe": _probe(model, "/-/ready", 10, 3),
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": _volumes(model)[1],
    }


def deployment(model: Model, options: Options) -> dict[str, Any]:
    pod_security = {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "fsGroup": UID,
                    "seccompProfile": {"type": "RuntimeDefault"}}  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(NAME, {**monitor_labels(), **part_of()}),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": monitor_labels()},
            "template": {
                "metadata": {"labels": monitor_labels()},
                "spec": {
                    "securityContext": pod_security,
                    "containers": [_container(model, options)],
                    "volumes": _volumes(model)[0],
                },
            },
        },
    }


def service(model: Model) -> dict[str, Any]:
    ports = [
        {"name": PORT_HTTP, "port": exporter_port(model), "targetPort": PORT_HTTP, "protocol": "TCP"},
        {"name": PORT_OTLP, "port": OTLP_PORT, "targetPort": PORT_HTTP, "protocol": "TCP"},
    ]
    if exporter_port(model) == OTLP_PORT:  # one Service port cannot be listed twice
        ports = ports[:1]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(NAME, {**monitor_labels(), **part_of()}),
        "spec": {"selector": monitor_labels(), "ports": ports},
    }


def volume_claim() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta(PVC, {**monitor_labels(), **part_of()}),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": PVC_SIZE}}},
    }
