"""The service's side of the configuration: storage, the exporter, alerting, the weekly report's
delivery and fleet mode (:mod:`monitor.config` composes them into the whole spec)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from monitor.addresses import listen_address, storage_url_problem
from monitor.config_base import LISTEN, SCHEDULE_PATTERN, Name
from monitor.config_base import Strict as _Strict
from monitor.durations import Duration


def sqlite_beside(url: str, folder: Path) -> str:
    """``url`` with a relative SQLite file made absolute under ``folder`` (the config file's), so
    one config names one store whatever the working directory; any other URL as given."""
    scheme, sep, rest = url.partition(":///")
    if scheme.partition("+")[0] != "sqlite" or not sep or not rest or rest.startswith((":memory:", "/")):
        return url
    path, query, args = rest.partition("?")
    return f"{scheme}:///{os.path.abspath(folder / path)}{query}{args}"


#: The shortest ``storage.retention``: windows' heads need their raw slices, and late readings
#: a day of stored readings (monitor.store.retention.KEEP_READINGS).
MIN_RETENTION = 86400.0


class StorageSpec(_Strict):
    url: str = "sqlite:///m3mon.db"
    retention: Duration = 14 * 86400.0
    buffer_dir: str = ".m3mon-spool"
    buffer_max_items: int = Field(default=100_000, ge=100)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        problem = storage_url_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("retention")
    @classmethod
    def _retention(cls, value: float) -> float:
        if value < MIN_RETENTION:
            raise ValueError(
                f"keep raw rows at least 1d (got {value:g}s): a window's ragged first hour is "
                "counted from its raw slices, and a late scrape reading splits its interval for a day"
            )
        return value


class CredentialsSpec(_Strict):
    """What the generated Prometheus, Alertmanager and vLLM configs present to the monitor."""

    username: Annotated[str, Field(pattern=r"^[^:\s]+$")] = "m3mon"
    password_file: str = Field(min_length=1)
    ca_file: str | None = None


class ExporterSpec(_Strict):
    listen: Annotated[str, Field(pattern=LISTEN)] = "127.0.0.1:9464"
    web_config_file: str | None = None
    credentials: CredentialsSpec | None = None
    #: OTLP/HTTP metrics URL (e.g. http://collector:4318/v1/metrics) for the GenAI client metrics.
    otlp_metrics_endpoint: Annotated[str, Field(pattern=r"^https?://")] | None = None
    otlp_metrics_interval: Duration = Field(default=60.0, gt=0)
    #: The monitor's address as people open it (a browser on call): runbook links point at its
    #: ``/runbooks/``. Default: ``http://`` + ``listen`` (a wildcard host becomes 127.0.0.1).
    external_url: Annotated[str, Field(pattern=r"^https?://[^\s/]+")] | None = None

    @field_validator("listen")
    @classmethod
    def _port(cls, value: str) -> str:
        return listen_address(value)


def external_url(exporter: ExporterSpec) -> str:
    """``exporter.external_url`` without a trailing slash, else ``http://`` + ``exporter.listen`` (a
    wildcard host, which no browser opens, as 127.0.0.1)."""
    if exporter.external_url:
        return exporter.external_url.rstrip("/")
    host, _, port = exporter.listen.rpartition(":")
    return f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{port}"


class RouteSpec(_Strict):
    labels: dict[str, str] = {}
    receiver: Name
    webhook_url: str | None = None


class AlertingSpec(_Strict):
    page: RouteSpec = RouteSpec(labels={"severity": "page"}, receiver="pager")
    ticket: RouteSpec = RouteSpec(labels={"severity": "ticket"}, receiver="chat")
    monitor_receiver_url: str = "http://127.0.0.1:9464/alertmanager"
    #: Where each alert's ``runbook_url`` points (``<base>/<AlertName>.md``). Default: the runbooks the
    #: monitor itself serves, ``<exporter.external_url>/runbooks``.
    runbook_base_url: str | None = None
    #: Grafana's address as on-call opens it: burn notifications link the class's SLO dashboard there.
    grafana_url: Annotated[str, Field(pattern=r"^https?://")] = "http://127.0.0.1:3000"
    prometheus_job_vllm: str = "vllm"
    prometheus_job_monitor: str = "m3mon"
    #: A trace viewer's URL for one trace, ``{trace_id}`` in it (Jaeger: ``http://jaeger:16686/trace/{trace_id}``;
    #: Tempo in Grafana Explore): `m3mon traces` and the report's incidents link each request there.
    trace_url: Annotated[str, Field(pattern=r"^https?://.*\{trace_id\}")] | None = None


class SMTPSpec(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=25, ge=1, le=65535)
    starttls: bool = False
    username_env: str | None = None
    password_env: str | None = None
    sender: str = "m3mon@localhost"


class ReportSpec(_Strict):
    recipients: list[str] = []
    schedule: Annotated[str, Field(pattern=SCHEDULE_PATTERN)] = "mon 09:00"
    timezone: str = "UTC"
    smtp: SMTPSpec = SMTPSpec()
    webhook_url: str | None = None


class FleetMonitorSpec(_Strict):
    """One monitor replica, where Prometheus scrapes it (``m3mon generate``'s fleet scrape job)."""

    shard: int = Field(ge=0)
    replica: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$")]
    address: Annotated[str, Field(pattern=LISTEN)]


class FleetSpec(_Strict):
    """Fleet mode (docs/fleet.md): endpoints split into ``shards`` by hashmod; PostgreSQL only."""

    shards: int = Field(default=1, ge=1, le=1024)
    shard: int | None = Field(default=None, ge=0)
    replica: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$")] | None = None
    monitors: list[FleetMonitorSpec] = []

    @model_validator(mode="after")
    def _check(self) -> FleetSpec:
        if self.shard is not None and self.shard >= self.shards:
            raise ValueError(f"fleet.shard must be below fleet.shards ({self.shards}), got {self.shard}")
        bad = [m.shard for m in self.monitors if m.shard >= self.shards]
        if bad:
            raise ValueError(f"fleet.monitors: shard {bad[0]} is not below fleet.shards ({self.shards})")
        return self
