"""The frozen internal model every other module works from.

:func:`build_model` maps the validated user spec (:mod:`monitor.config`) into plain frozen
dataclasses. Later stages (scrape, probes, SLO evaluation, store, generators, report) import
from here, never from the YAML spec.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from monitor.addresses import checked_storage_url
from monitor.config import ConfigSpec, load_config, parse_maintenance_file
from monitor.config_service import external_url, sqlite_beside
from monitor.conventions import LATENCY_SLIS, PROBE_LATENCY_BUCKETS, period_window
from monitor.errors import ConfigError
from monitor.maintenance import Maintenance, MaintenanceSpec, build_maintenance
from monitor.model_service import Alerting, Credentials, Fleet, FleetMonitor, Report, Smtp, Storage
from monitor.model_traffic import Traffic


@dataclass(frozen=True)
class Deployment:
    image_digest: str | None = None
    checkpoint: str | None = None
    tensor_parallel_size: int | None = None
    expert_parallel_size: int | None = None
    data_parallel_size: int | None = None
    max_model_len: int | None = None
    kv_cache_dtype: str | None = None


@dataclass(frozen=True)
class GpuExporter:
    """Where the endpoint's GPU telemetry is: a dcgm-exporter or AMD device-metrics-exporter page."""

    url: str
    kind: str = "auto"  # "auto", "dcgm" or "amd"


@dataclass(frozen=True)
class Endpoint:
    name: str
    base_url: str
    backend: str
    model: str
    classes: tuple[str, ...]
    scrape_interval: float
    metrics_path: str = "/metrics"
    api_key_env: str | None = None
    deployment: Deployment = field(default_factory=Deployment)
    span_service_name: str | None = None  # OTLP service.name of its spans (None: the name)
    span_class: str | None = None  # the class its real-traffic spans count for (None: routed)
    gpu_exporter: GpuExporter | None = None  # its GPUs' exporter page (None: no GPU telemetry)

    @property
    def service_name(self) -> str:
        """The OTLP resource ``service.name`` this endpoint's spans carry (docs/traces.md)."""
        return self.span_service_name or self.name

    @property
    def metrics_url(self) -> str:
        return self.base_url.rstrip("/") + self.metrics_path

    def api_key(self) -> str | None:
        """The API key, read from the environment at call time (never stored or logged)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def key_unset(self) -> str | None:
        """``endpoint E: api_key_env V is not set in this environment (...)`` when ``api_key_env``
        names an unset (or empty) variable: the one wording check-config, probe, replay and contract
        print and ``m3mon run`` logs. None when there is no such problem."""
        if not self.api_key_env or os.environ.get(self.api_key_env):
            return None
        return (
            f"endpoint {self.name}: api_key_env {self.api_key_env} is not set in this environment "
            "(scrapes and probes will send no API key)"
        )

    def headers(self) -> dict[str, str]:
        key = self.api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}


@dataclass(frozen=True)
class SLO:
    """One objective of one request class, evaluated from good and total events."""

    request_class: str
    name: str
    sli: str
    objective: float  # ratio in (0, 1), e.g. 0.999
    period: float  # seconds
    source: str  # "probes" or "server"
    threshold: float | None = None  # seconds, latency SLIs only
    description: str = ""
    min_events: int | None = None  # override of the burn alerts' minimum-events guard
    exhaustion_within: float | None = None  # seconds: ticket when the budget runs out sooner
    page_within: float | None = None  # seconds: a total outage pages within this long
    tenant: str | None = None  # source "traffic": only this tenant's requests (None: all)
    priority: str | None = None  # source "traffic": only this priority band's requests (None: all)

    @property
    def id(self) -> str:
        return f"{self.request_class}/{self.name}"

    @property
    def declared(self) -> str:
        """The name it was declared under, before its expansion per tenant and band (``goodput``
        of ``goodput.acme.high``)."""
        suffix = ".".join(p for p in (self.tenant, self.priority) if p)
        return self.name.removesuffix("." + suffix) if suffix else self.name

    @property
    def budget(self) -> float:
        """Allowed error ratio: 1 − objective, rounded to 12 decimals so 99.9 % is exactly the
        0.001 the rules write (1 − 0.999 is 0.0009999999999998899 in binary floating point)."""
        return round(1.0 - self.objective, 12)

    @property
    def from_monitor(self) -> bool:
        """Whether its events are the monitor's own counters (probes, real traffic's spans), not vLLM's."""
        return self.source in ("probes", "traffic")

    @property
    def is_latency(self) -> bool:
        return self.sli in LATENCY_SLIS

    @property
    def period_window(self) -> str:
        return period_window(self.period)


@dataclass(frozen=True)
class RetryPolicy:
    """How a probe retries a failed request (:mod:`monitor.probes.retry`); ``max_retries`` 0: never."""

    max_retries: int = 0
    initial_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 120.0

    @property
    def enabled(self) -> bool:
        return self.max_retries > 0


@dataclass(frozen=True)
class ProbePlan:
    kinds: tuple[str, ...]
    interval: float
    timeout: float
    jitter: float
    long_prompt_tokens: int
    tool_delay: float
    agent_rounds: int
    retry: RetryPolicy = RetryPolicy()


@dataclass(frozen=True)
class BudgetPolicy:
    """When deploys to a class freeze (``m3mon budget gate``)."""

    freeze_below: float  # ratio of the period's budget left, e.g. 0.1
    freeze_on_page_burn: bool


@dataclass(frozen=True)
class RequestClass:
    name: str
    max_context_tokens: int
    probe: ProbePlan
    slos: tuple[SLO, ...]
    dedicated_pool: bool = False
    description: str = ""
    budget_policy: BudgetPolicy = field(default_factory=lambda: BudgetPolicy(0.10, True))


#: When set, replaces ``storage.url``: keeps a database password out of the file (compose sets it).
STORAGE_URL_ENV = "M3MON_STORAGE_URL"


@dataclass(frozen=True)
class Model:
    """The whole monitored deployment, as the rest of the package sees it."""

    source: str
    endpoints: tuple[Endpoint, ...]
    classes: tuple[RequestClass, ...]
    storage: Storage
    exporter_listen: str
    alerting: Alerting
    report: Report
    #: exporter-toolkit web config the service serves with (resolved against the config's folder).
    web_config_file: str | None = None
    credentials: Credentials | None = None
    fleet: Fleet = field(default_factory=Fleet)
    #: OTLP/HTTP metrics URL for the probes' GenAI client metrics (None: not exported) and period.
    otlp_metrics: tuple[str, float] | None = None
    #: Maintenance windows from the config and its maintenance file (docs/maintenance.md).
    maintenance: Maintenance = field(default_factory=Maintenance)
    maintenance_file: str | None = None
    traffic: Traffic = field(default_factory=Traffic)

    @property
    def slos(self) -> tuple[SLO, ...]:
        return tuple(s for c in self.classes for s in c.slos)

    def request_class(self, name: str) -> RequestClass:
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(name)

    def endpoints_for(self, class_name: str) -> tuple[Endpoint, ...]:
        return tuple(e for e in self.endpoints if class_name in e.classes)

    def keys_unset(self) -> tuple[Endpoint, ...]:
        """Endpoints whose ``api_key_env`` names a variable this environment does not set."""
        return tuple(e for e in self.endpoints if e.key_unset() is not None)

    def latency_buckets(self) -> tuple[float, ...]:
        """Probe histogram edges: the defaults plus every SLO threshold, so SLOs are exact."""
        edges = set(PROBE_LATENCY_BUCKETS)
        edges.update(s.threshold for s in self.slos if s.threshold is not None)
        return tuple(sorted(edges))


def _class(spec: ConfigSpec, idx: int) -> RequestClass:
    c = spec.request_classes[idx]
    slos = tuple(
        SLO(
            request_class=c.name,
            name=".".join(p for p in (s.name, tenant, band) if p),
            sli=s.sli,
            objective=s.objective / 100.0,
            period=s.period,
            source=s.source,
            threshold=s.threshold,
            description=s.description,
            min_events=s.min_events,
            exhaustion_within=s.exhaustion_within,
            page_within=s.page_within,
            tenant=tenant or None,
            priority=band or None,
        )
        for s in c.slos
        for tenant in s.tenants or [""]
        for band in s.priorities or [""]
    )
    p = c.probe
    plan = ProbePlan(
        kinds=tuple(dict.fromkeys(c.probes)),
        interval=p.interval,
        timeout=p.timeout,
        jitter=p.jitter,
        long_prompt_tokens=p.long_prompt_tokens or int(c.max_context_tokens * 0.9),
        tool_delay=p.tool_delay,
        agent_rounds=p.agent_rounds,
        retry=RetryPolicy(
            p.retry.max_retries, p.retry.initial_delay, p.retry.max_delay, p.retry.max_retry_after
        ),
    )
    bp = c.budget_policy
    policy = BudgetPolicy(bp.freeze_below / 100.0, bp.freeze_on_page_burn) if bp else BudgetPolicy(0.10, True)
    return RequestClass(c.name, c.max_context_tokens, plan, slos, c.dedicated_pool, c.description, policy)


def build_model(
    spec: ConfigSpec, source: str = "<config>", more_maintenance: tuple[MaintenanceSpec, ...] = ()
) -> Model:
    """Freeze a validated spec (plus windows read from its maintenance file) into the internal model."""
    endpoints = tuple(
        Endpoint(
            name=e.name,
            base_url=e.base_url.rstrip("/"),
            backend=e.backend,
            model=e.model,
            classes=tuple(e.classes),
            scrape_interval=e.scrape_interval,
            metrics_path=e.metrics_path,
            api_key_env=e.api_key_env,
            deployment=Deployment(**e.deployment.model_dump()),
            span_service_name=e.span_service_name,
            span_class=e.span_class,
            gpu_exporter=GpuExporter(g.url, g.kind) if (g := e.gpu_exporter) else None,
        )
        for e in spec.endpoints
    )
    a, r = spec.alerting, spec.report
    alerting = Alerting(
        page_labels=tuple(sorted(a.page.labels.items())),
        page_receiver=a.page.receiver,
        page_webhook=a.page.webhook_url,
        ticket_labels=tuple(sorted(a.ticket.labels.items())),
        ticket_receiver=a.ticket.receiver,
        ticket_webhook=a.ticket.webhook_url,
        monitor_receiver_url=a.monitor_receiver_url,
        runbook_base_url=(a.runbook_base_url or f"{external_url(spec.exporter)}/runbooks").rstrip("/"),
        grafana_url=a.grafana_url.rstrip("/"),
        trace_url=a.trace_url,
        job_vllm=a.prometheus_job_vllm,
        job_monitor=a.prometheus_job_monitor,
    )
    report = Report(
        recipients=tuple(r.recipients),
        schedule=r.schedule,
        timezone=r.timezone,
        smtp=Smtp(**r.smtp.model_dump()),
        webhook_url=r.webhook_url,
    )
    s = spec.storage
    # a relative SQLite file is beside the config file; an environment URL is taken as given
    env_url = os.environ.get(STORAGE_URL_ENV)
    url = checked_storage_url(env_url, STORAGE_URL_ENV) if env_url else (
        s.url if source.startswith("<") else sqlite_beside(s.url, Path(source).parent)
    )  # fmt: skip
    storage = Storage(url, s.retention, s.buffer_dir, s.buffer_max_items)
    return Model(
        source=source,
        endpoints=endpoints,
        classes=tuple(_class(spec, i) for i in range(len(spec.request_classes))),
        storage=storage,
        exporter_listen=spec.exporter.listen,
        alerting=alerting,
        report=report,
        web_config_file=_beside(source, spec.exporter.web_config_file),
        credentials=Credentials(**creds.model_dump()) if (creds := spec.exporter.credentials) else None,
        fleet=_fleet(spec),
        otlp_metrics=(e.otlp_metrics_endpoint, e.otlp_metrics_interval)
        if (e := spec.exporter).otlp_metrics_endpoint
        else None,
        maintenance=build_maintenance([*spec.maintenance, *more_maintenance], spec.served()),
        maintenance_file=_beside(source, spec.maintenance_file),
        traffic=_traffic(spec),
    )


def _traffic(spec: ConfigSpec) -> Traffic:
    t = spec.traffic
    bands = tuple((b.name, b.up_to) for b in t.priority_bands)
    return Traffic(tuple(t.tenant_attributes), t.priority_attribute, t.default_priority, tuple(t.tenants),
                   t.top_tenants, t.min_tenant_requests, bands)  # fmt: skip


def _fleet(spec: ConfigSpec) -> Fleet:
    f = spec.fleet
    monitors = tuple(FleetMonitor(m.shard, m.replica, m.address) for m in f.monitors)
    return Fleet(f.shards, f.shard, f.replica, monitors)


def _beside(source: str, path: str | None) -> str | None:
    """``path`` as given when absolute, else relative to the folder of the config file ``source``."""
    if path is None or Path(path).is_absolute() or source.startswith("<"):
        return path
    return str(Path(source).parent / path)


def _maintenance_file(spec: ConfigSpec, source: str) -> tuple[MaintenanceSpec, ...]:
    path = _beside(source, spec.maintenance_file)
    if path is None:
        return ()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()  # no windows planned yet: `m3mon maintenance add --file` creates it
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read the maintenance file: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{path}: not UTF-8 text: byte {exc.start} cannot be decoded"]) from None
    return tuple(parse_maintenance_file(text, path, spec))


def load_model(path: str | Path) -> Model:
    """Load, validate and freeze a configuration file and its maintenance file."""
    spec = load_config(path)
    return build_model(spec, str(path), _maintenance_file(spec, str(path)))
