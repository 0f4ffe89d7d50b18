"""compose.yaml: the M3 pools, Prometheus, Alertmanager, Grafana, PostgreSQL and the monitor.

Every service uses the host network, so the addresses of the configuration (``127.0.0.1:8000``
...) mean the same thing inside and outside the containers and ``deploy/prometheus.yml`` serves
both compose and the tests. Profiles: ``gpu`` starts one vLLM server per configured endpoint
(8 GPUs each, the MiniMax-M3 recipe flags); ``sim`` starts ``m3mon sim`` in its place, so the
whole stack runs without GPUs. The vLLM image is ``${VLLM_IMAGE}`` (default: the recipe's tag);
pin it by digest with ``VLLM_IMAGE_DIGEST`` in ``.env``. vLLM (and the simulator) export their
request spans over OTLP/HTTP protobuf to the monitor's ``/v1/traces``; with
``exporter.credentials`` every client of the monitor authenticates (:mod:`.compose_secrets`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from monitor import conventions as cv
from monitor.fleet.layout import FLEET_PROMETHEUS_PORT, fleet_layout
from monitor.generate.compose_secrets import (
    MONITOR_SECRETS,
    WEB_CONFIG,
    client_secrets,
    monitor_secrets,
    otlp_exporter,
    secrets_section,
)
from monitor.generate.dashboards.overview import UID as OVERVIEW_UID
from monitor.generate.provisioning import DASHBOARD_DIR
from monitor.model import STORAGE_URL_ENV, Endpoint, Model

VLLM_TAG = "vllm/vllm-openai:minimax-m3"
#: Prometheus 2.x keeps vLLM's ``le="5.0"`` strings verbatim (3.x normalises them to ``"5"``).
PROMETHEUS_IMAGE = "prom/prometheus:v2.53.3"
ALERTMANAGER_IMAGE = "prom/alertmanager:v0.27.0"
GRAFANA_IMAGE = "grafana/grafana:11.3.0"
POSTGRES_IMAGE = "postgres:15"
JAEGER_IMAGE = "jaegertracing/all-in-one:1.62.0"
MONITOR_IMAGE = "m3-monitor:local"
#: The compose PostgreSQL: role and database name, password from the environment (default m3mon).
PG_NAME = "m3mon"
PG_PASSWORD = "${POSTGRES_PASSWORD:-m3mon}"
PG_URL = f"postgresql+psycopg://{PG_NAME}:{PG_PASSWORD}@127.0.0.1:5432/{PG_NAME}"
GPUS_PER_POOL = 8
#: vLLM flags a signal needs beyond the defaults, each with the signal that reads it. The OTLP
#: traces endpoint (span goodput, stage breakdowns) is set with the monitor's URL in :func:`_vllm`.
SIGNAL_FLAGS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("--enable-prompt-tokens-details",), "long-prompt probe: warm cached_tokens (prefix-cache reuse)"),
    (("--kv-cache-metrics",), "bottleneck verdict: KV residency histograms (vllm:kv_block_*_seconds)"),
)


def _port(e: Endpoint) -> str:
    return str(urlsplit(e.base_url).port or 8000)


def _max_len(model: Model, e: Endpoint) -> int:
    if e.deployment.max_model_len:
        return e.deployment.max_model_len
    return max(model.request_class(c).max_context_tokens for c in e.classes)


def _image(e: Endpoint) -> str:
    pinned = e.deployment.image_digest
    if pinned and "@sha256:" in pinned:
        return f"${{VLLM_IMAGE:-{pinned}}}"
    return f"${{VLLM_IMAGE:-{VLLM_TAG}}}${{VLLM_IMAGE_DIGEST:+@${{VLLM_IMAGE_DIGEST}}}}"


def _health(url: str, start_period: str) -> dict[str, Any]:
    probe = f"import urllib.request,sys; sys.exit(urllib.request.urlopen('{url}', timeout=4).status != 200)"
    return {
        "test": ["CMD", "python3", "-c", probe],
        "interval": "30s",
        "timeout": "5s",
        "retries": 5,
        "start_period": start_period,
    }


def _vllm(model: Model, e: Endpoint) -> dict[str, Any]:
    tp = e.deployment.tensor_parallel_size or GPUS_PER_POOL
    args = [
        e.model,
        "--host",
        "0.0.0.0",
        "--port",
        _port(e),
        "--served-model-name",
        e.model,
        "--tensor-parallel-size",
        str(tp),
        "--block-size",
        str(cv.M3_BLOCK_SIZE),
        "--max-model-len",
        str(_max_len(model, e)),
        "--tool-call-parser",
        "minimax_m3",
        "--reasoning-parser",
        "minimax_m3",
        "--enable-auto-tool-choice",
        # span goodput and the stage breakdowns (docs/traces.md): request spans to the monitor
        "--otlp-traces-endpoint",
        f"${{OTLP_TRACES_ENDPOINT:-{_traces_url(model)}}}",
        *(flag for flags, _signal in SIGNAL_FLAGS for flag in flags),
    ]
    return {
        "profiles": ["gpu"],
        "image": _image(e),
        "network_mode": "host",
        "ipc": "host",
        "shm_size": "32gb",
        "volumes": ["${HF_CACHE:-~/.cache/huggingface}:/root/.cache/huggingface"],
        **otlp_exporter(
            model, ["vllm", "serve", *args], args, env={"HF_TOKEN": "${HF_TOKEN:-}", **_service(e)}
        ),
        "deploy": {
            "resources": {
                "reservations": {"devices": [{"driver": "nvidia", "count": tp, "capabilities": ["gpu"]}]}
            }
        },
        "healthcheck": _health(f"http://127.0.0.1:{_port(e)}/health", "60m"),
        "restart": "unless-stopped",
    }


def _service(e: Endpoint) -> dict[str, str]:
    """The spans' ``service.name``: how span goodput tells the endpoint (docs/slo-events.md)."""
    return {"OTEL_SERVICE_NAME": e.service_name}


def _traces_url(model: Model) -> str:
    """The monitor's OTLP/HTTP receiver, on the origin of its Alertmanager receiver URL."""
    url = urlsplit(model.alerting.monitor_receiver_url)
    return f"{url.scheme}://{url.netloc}/v1/traces"


def _sim(model: Model, e: Endpoint) -> dict[str, Any]:
    command = [
        "m3mon",
        "sim",
        "--host",
        "127.0.0.1",
        "--port",
        _port(e),
        "--max-model-len",
        str(_max_len(model, e)),
    ]
    return {
        "profiles": ["sim"],
        "image": MONITOR_IMAGE,
        "build": ".",
        "network_mode": "host",
        **otlp_exporter(model, [*command, "--otlp-traces-endpoint", _traces_url(model)], env=_service(e)),
        "healthcheck": _health(f"http://127.0.0.1:{_port(e)}/health", "30s"),
        "restart": "unless-stopped",
    }


def _core(model: Model) -> dict[str, Any]:
    monitor_command = ["m3mon", "run", "-c", "/etc/m3mon/monitor.yaml", "--upgrade"]  # migrate, then run
    if model.credentials is not None:
        monitor_command += ["--web.config.file", f"{MONITOR_SECRETS}/{WEB_CONFIG}"]
    return {
        "prometheus": {
            "image": PROMETHEUS_IMAGE,
            "network_mode": "host",
            # exemplar storage: the probe histograms' trace ids (Grafana links a latency point to its trace)
            "command": [
                "--config.file=/etc/prometheus/prometheus.yml",
                "--storage.tsdb.retention.time=35d",
                "--enable-feature=exemplar-storage",
            ],
            "volumes": [
                "./deploy/prometheus.yml:/etc/prometheus/prometheus.yml:ro",
                "./alerts:/etc/prometheus/rules:ro",
                "prometheus-data:/prometheus",
            ],
            **client_secrets(model),
            "restart": "unless-stopped",
        },
        "alertmanager": {
            "image": ALERTMANAGER_IMAGE,
            "network_mode": "host",
            "command": ["--config.file=/etc/alertmanager/alertmanager.yml"],
            "volumes": ["./alerts/alertmanager.yml:/etc/alertmanager/alertmanager.yml:ro"],
            **client_secrets(model),
            "restart": "unless-stopped",
        },
        "grafana": {
            "image": GRAFANA_IMAGE,
            "network_mode": "host",
            "environment": {
                "GF_AUTH_ANONYMOUS_ENABLED": "true",
                "GF_AUTH_ANONYMOUS_ORG_ROLE": "Viewer",
                # Grafana opens on the SLO overview
                "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH": f"{DASHBOARD_DIR}/{OVERVIEW_UID}.json",
            },
            "volumes": [
                "./dashboards/provisioning:/etc/grafana/provisioning:ro",
                f"./dashboards:{DASHBOARD_DIR}:ro",
            ],
            "restart": "unless-stopped",
        },
        "postgres": {
            "image": POSTGRES_IMAGE,
            "network_mode": "host",
            "command": ["postgres", "-c", "listen_addresses=127.0.0.1"],
            "environment": {
                "POSTGRES_USER": PG_NAME,
                "POSTGRES_DB": PG_NAME,
                "POSTGRES_PASSWORD": PG_PASSWORD,
            },
            "volumes": ["postgres-data:/var/lib/postgresql/data"],
            "healthcheck": {"test": ["CMD", "pg_isready", "-U", PG_NAME], "interval": "10s", "retries": 5},
            "restart": "unless-stopped",
        },
        "jaeger": {
            "image": JAEGER_IMAGE,
            "network_mode": "host",
            "environment": {"COLLECTOR_OTLP_ENABLED": "true"},
            "restart": "unless-stopped",
        },
        "monitor": {
            "image": MONITOR_IMAGE,
            "build": ".",
            "network_mode": "host",
            "command": monitor_command,
            "environment": {
                "M3_API_KEY": "${M3_API_KEY:-}",
                STORAGE_URL_ENV: PG_URL,
            },
            "volumes": ["./deploy/monitor.yaml:/etc/m3mon/monitor.yaml:ro", "monitor-data:/var/lib/m3mon"],
            **monitor_secrets(model),
            "working_dir": "/var/lib/m3mon",
            "depends_on": {"postgres": {"condition": "service_healthy"}},
            "restart": "unless-stopped",
        },
    }


def _fleet(model: Model, core: dict[str, Any]) -> dict[str, Any]:
    """Profile ``fleet``: every shard's replicas (HA pairs) on the core PostgreSQL, and a Prometheus
    on FLEET_PROMETHEUS_PORT scraping them with the fleet rules (docs/fleet.md). Run it with
    ``--scale monitor=0``: the single monitor would probe every endpoint again."""
    fleet = fleet_layout(model).fleet
    services: dict[str, Any] = {}
    first = f"monitor-{fleet.monitors[0].shard}-{fleet.monitors[0].replica}"
    for m in fleet.monitors:
        name = f"monitor-{m.shard}-{m.replica}"
        monitor = dict(core["monitor"], profiles=["fleet"])
        command = [c for c in core["monitor"]["command"] if name == first or c != "--upgrade"]  # one migrates
        monitor["command"] = [*command, "--shard", f"{m.shard}/{fleet.shards}",
                              "--replica", f"{m.shard}-{m.replica}", "--listen", m.address]  # fmt: skip
        if name != first:  # the others restart until the first has migrated the store
            monitor["depends_on"] = {**core["monitor"]["depends_on"], first: {"condition": "service_started"}}
        # its own spool (storage.buffer_dir, relative to working_dir) survives a re-create
        monitor["volumes"] = [
            "./deploy/monitor.yaml:/etc/m3mon/monitor.yaml:ro",
            f"{name}-data:/var/lib/m3mon",
        ]
        services[name] = monitor
    prometheus = dict(core["prometheus"], profiles=["fleet"])
    prometheus["command"] = [
        "--config.file=/etc/prometheus/prometheus.yml",
        "--storage.tsdb.retention.time=35d",
        "--enable-feature=exemplar-storage",
        f"--web.listen-address=127.0.0.1:{FLEET_PROMETHEUS_PORT}",
    ]
    prometheus["volumes"] = [
        "./deploy/prometheus-fleet.yml:/etc/prometheus/prometheus.yml:ro",
        "./alerts:/etc/prometheus/rules:ro",
        "prometheus-fleet-data:/prometheus",
    ]
    services["prometheus-fleet"] = prometheus
    return services


def fleet_volumes(model: Model) -> dict[str, dict[str, Any]]:
    """One named volume per fleet replica, for its spool."""
    return {f"monitor-{m.shard}-{m.replica}-data": {} for m in fleet_layout(model).fleet.monitors}


def compose_file(model: Model) -> dict[str, Any]:
    """The compose.yaml document for ``model``."""
    services: dict[str, Any] = {}
    for e in model.endpoints:
        services[f"vllm-{e.name}"] = _vllm(model, e)
        services[f"sim-{e.name}"] = _sim(model, e)
    core = _core(model)
    services.update(core)
    services.update(_fleet(model, core))
    return {
        "name": "m3mon",
        "services": services,
        "volumes": {
            "prometheus-data": {},
            "postgres-data": {},
            "monitor-data": {},
            "prometheus-fleet-data": {},
            **fleet_volumes(model),
        },
        **secrets_section(model),
    }
