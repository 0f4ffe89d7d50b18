"""prometheus.yml: scrape every vLLM endpoint (labelled ``endpoint``) and the monitor, load the rules.

The rules select by ``job`` (``alerting.prometheus_job_vllm`` / ``..._monitor``). vLLM endpoints
are scraped at their own ``scrape_interval``: one scrape config per distinct interval, named by
:func:`monitor.conventions.vllm_scrape_job` (just the vLLM job name when all share one interval)
and relabelled back to ``job="<vllm job>"``. Per-endpoint metrics paths and schemes travel as
``__metrics_path__``/``__scheme__`` target labels. With ``exporter.credentials`` the monitor's
job authenticates (``basic_auth`` with a ``password_file``, never the password itself) and, when
the monitor's receiver URL is https, scrapes over TLS trusting ``ca_file``.

Endpoints with a ``gpu_exporter`` add the ``gpu-exporter`` job (:data:`monitor.conventions.JOB_GPU`):
one target per endpoint, labelled ``endpoint`` (and ``gpu_exporter`` = dcgm/amd/auto), scraped at
the endpoint's interval, so DCGM and AMD series sit beside the endpoint's queue and KV series.

Fleet mode (docs/fleet.md): ``monitors`` lists every replica (``shard``, ``replica``, address);
the monitor job then scrapes them all with ``honor_labels`` and ``shard``/``replica`` target
labels. ``shard`` (a :class:`~monitor.fleet.shard.Shard`) makes a per-shard Prometheus keep only
that shard's endpoints with a ``hashmod`` relabel on ``endpoint``, the same hash the monitor uses.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from monitor import conventions as cv
from monitor.fleet.shard import Shard
from monitor.model import Endpoint, Model
from monitor.model_service import FleetMonitor

#: prometheus_client >= 0.22 answers Prometheus 2.x's OpenMetrics Accept header with
#: ``escaping=underscores``: ``vllm:num_requests_running`` arrives as ``vllm_num_requests_running``.
#: Restore vLLM's names (no vLLM family starts with ``vllm_``) so rules and dashboards match both
#: this and the plain-text format.
UNESCAPE_COLONS = {
    "source_labels": ["__name__"],
    "regex": "vllm_(.+)",
    "target_label": "__name__",
    "replacement": "vllm:$1",
}


def duration(seconds: float) -> str:
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{int(seconds * 1000)}ms"


def _target(e: Endpoint) -> dict[str, Any]:
    url = urlsplit(e.metrics_url)
    return {
        "targets": [url.netloc],
        "labels": {
            cv.L_ENDPOINT: e.name,
            "__metrics_path__": url.path or "/metrics",
            "__scheme__": url.scheme,
        },
    }


def monitor_client(model: Model) -> dict[str, Any]:
    """What a client of the monitor sends: basic auth from a password file, the CA for its TLS.

    Empty without ``exporter.credentials``. The keys are those of Prometheus' scrape config and
    of Alertmanager's ``http_config`` alike.
    """
    creds = model.credentials
    if creds is None:
        return {}
    out: dict[str, Any] = {"basic_auth": {"username": creds.username, "password_file": creds.password_file}}
    if creds.ca_file:
        out["tls_config"] = {"ca_file": creds.ca_file}
    return out


def _monitor_job(
    model: Model, interval: float | None, monitors: tuple[FleetMonitor, ...] = ()
) -> dict[str, Any]:
    job: dict[str, Any] = {
        "job_name": model.alerting.job_monitor,
        "scrape_interval": duration(interval or 15.0),
    }
    if urlsplit(model.alerting.monitor_receiver_url).scheme == "https":
        job["scheme"] = "https"
    job.update(monitor_client(model))
    if not monitors:
        job["static_configs"] = [{"targets": [model.exporter_listen]}]
        return job
    job["honor_labels"] = True  # a replica's own labels (endpoint, shard) win over target labels
    job["static_configs"] = [
        {"targets": [m.address], "labels": {cv.L_SHARD: str(m.shard), cv.L_REPLICA: m.replica}}
        for m in monitors
    ]
    return job


def _hashmod(shard: Shard) -> list[dict[str, Any]]:
    """Keep the endpoints of ``shard``: Prometheus' hashmod of the ``endpoint`` label."""
    return [
        {"source_labels": [cv.L_ENDPOINT], "modulus": shard.count, "target_label": "__tmp_shard",
         "action": "hashmod"},
        {"source_labels": ["__tmp_shard"], "regex": str(shard.index), "action": "keep"},
    ]  # fmt: skip


def vllm_jobs(
    model: Model, interval: float | None = None, shard: Shard | None = None
) -> list[dict[str, Any]]:
    """One scrape config per distinct endpoint ``scrape_interval`` (or one at ``interval``: tests)."""
    groups: dict[float, list[Endpoint]] = {}
    for e in model.endpoints:
        groups.setdefault(interval or e.scrape_interval, []).append(e)
    jobs = []
    for every, endpoints in sorted(groups.items()):
        name = cv.vllm_scrape_job(model.alerting.job_vllm, duration(every), len(groups) == 1)
        job: dict[str, Any] = {"job_name": name, "scrape_interval": duration(every)}
        relabel = _hashmod(shard) if shard is not None else []
        if name != model.alerting.job_vllm:
            relabel.append({"target_label": cv.L_JOB, "replacement": model.alerting.job_vllm})
        if relabel:
            job["relabel_configs"] = relabel
        job["static_configs"] = [_target(e) for e in endpoints]
        job["metric_relabel_configs"] = [UNESCAPE_COLONS]
        jobs.append(job)
    return jobs


def gpu_jobs(model: Model, interval: float | None = None, shard: Shard | None = None) -> list[dict[str, Any]]:
    """The GPU exporters of the endpoints that have one: one job per distinct scrape interval."""
    groups: dict[float, list[Endpoint]] = {}
    for e in model.endpoints:
        if e.gpu_exporter is not None:
            groups.setdefault(interval or e.scrape_interval, []).append(e)
    jobs = []
    for every, endpoints in sorted(groups.items()):
        name = cv.JOB_GPU if len(groups) == 1 else f"{cv.JOB_GPU}-{duration(every)}"
        job: dict[str, Any] = {"job_name": name, "scrape_interval": duration(every)}
        relabel = _hashmod(shard) if shard is not None else []
        if name != cv.JOB_GPU:
            relabel.append({"target_label": cv.L_JOB, "replacement": cv.JOB_GPU})
        if relabel:
            job["relabel_configs"] = relabel
        job["static_configs"] = [_gpu_target(e) for e in endpoints]
        jobs.append(job)
    return jobs


def _gpu_target(e: Endpoint) -> dict[str, Any]:
    assert e.gpu_exporter is not None
    url = urlsplit(e.gpu_exporter.url)
    labels = {cv.L_ENDPOINT: e.name, "gpu_exporter": e.gpu_exporter.kind,
              "__metrics_path__": url.path or "/metrics", "__scheme__": url.scheme}  # fmt: skip
    return {"targets": [url.netloc], "labels": labels}


def prometheus_config(
    model: Model,
    rule_files: list[str],
    alertmanager: str = "127.0.0.1:9093",
    interval: float | None = None,
    *,
    monitors: tuple[FleetMonitor, ...] = (),
    shard: Shard | None = None,
) -> dict[str, Any]:
    """The prometheus.yml document. ``interval`` overrides scrape and evaluation intervals (tests);
    ``monitors`` and ``shard`` are the fleet layout (module docstring)."""
    scrape = interval or min(e.scrape_interval for e in model.endpoints)
    evaluation = interval or 15.0
    return {
        "global": {"scrape_interval": duration(scrape), "evaluation_interval": duration(evaluation)},
        "rule_files": rule_files,
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "scrape_configs": [
            *vllm_jobs(model, interval, shard),
            *gpu_jobs(model, interval, shard),
            _monitor_job(model, interval, monitors),
        ],
    }
