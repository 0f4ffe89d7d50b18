"""The frozen model of the service's settings: alerting, the report's delivery, storage, the
credentials clients present, fleet mode (:mod:`monitor.model` composes them into the model)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Alerting:
    page_labels: tuple[tuple[str, str], ...]
    page_receiver: str
    page_webhook: str | None
    ticket_labels: tuple[tuple[str, str], ...]
    ticket_receiver: str
    ticket_webhook: str | None
    monitor_receiver_url: str
    runbook_base_url: str
    job_vllm: str
    job_monitor: str
    grafana_url: str = "http://127.0.0.1:3000"
    trace_url: str | None = None

    def trace_link(self, trace_id: str | None) -> str | None:
        """The trace viewer's link for ``trace_id`` (None without a ``trace_url`` or a trace id)."""
        if self.trace_url is None or not trace_id:
            return None
        return self.trace_url.replace("{trace_id}", trace_id)


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int
    starttls: bool
    username_env: str | None
    password_env: str | None
    sender: str


@dataclass(frozen=True)
class Report:
    recipients: tuple[str, ...]
    schedule: str
    timezone: str
    smtp: Smtp
    webhook_url: str | None


@dataclass(frozen=True)
class Storage:
    url: str
    retention: float
    buffer_dir: str
    buffer_max_items: int


@dataclass(frozen=True)
class Credentials:
    """What Prometheus, Alertmanager and vLLM present to the monitor (basic auth, optional CA)."""

    username: str
    password_file: str
    ca_file: str | None = None


@dataclass(frozen=True)
class FleetMonitor:
    shard: int
    replica: str
    address: str


@dataclass(frozen=True)
class Fleet:
    """Fleet mode: ``shards`` hashmod shards; this process's ``shard``/``replica`` when set."""

    shards: int = 1
    shard: int | None = None
    replica: str | None = None
    monitors: tuple[FleetMonitor, ...] = ()
