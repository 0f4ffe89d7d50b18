"""The user's configuration: versioned YAML (``version: m3mon/v1``) validated with pydantic.

Nothing outside this module and :mod:`monitor.model` reads the YAML. :func:`load_config`
returns the validated spec; :func:`monitor.model.build_model` freezes it into the internal model
the rest of the package uses. Every problem is reported as ``FILE:LINE: YAML.PATH: message``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from monitor.config_base import ENV_VAR_PATTERN as _ENV_VAR
from monitor.config_base import PATTERN_WORDS as _PATTERN_WORDS
from monitor.config_base import URL_PATTERN as _URL
from monitor.config_base import Name
from monitor.config_base import Strict as _Strict
from monitor.config_service import (
    AlertingSpec,
    ExporterSpec,
    FleetSpec,
    ReportSpec,
    StorageSpec,
)
from monitor.conventions import PROBE_KINDS, PROBE_ONLY_SLIS, SLI_KINDS
from monitor.durations import Duration, Latency, parse_duration
from monitor.errors import ConfigError
from monitor.maintenance import MaintenanceFileSpec, MaintenanceSpec
from monitor.maintenance import problems as maintenance_problems
from monitor.yaml_problems import line_of, problem_lines, read_yaml, validation_problems

CONFIG_VERSION = "m3mon/v1"


class DeploymentSpec(_Strict):
    """What the config knows about a deployment that the server does not show."""

    image_digest: str | None = None
    checkpoint: str | None = None
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    expert_parallel_size: int | None = Field(default=None, ge=1)
    data_parallel_size: int | None = Field(default=None, ge=1)
    max_model_len: int | None = Field(default=None, ge=1)
    kv_cache_dtype: str | None = None


class GpuExporterSpec(_Strict):
    """The GPU exporter that watches an endpoint's GPUs (scraped on the endpoint's schedule)."""

    #: The exporter's metrics URL: dcgm-exporter (``:9400/metrics``) or AMD's device metrics exporter.
    url: Annotated[str, Field(pattern=_URL)]
    #: Which exporter serves it; ``auto`` tells them apart by their families.
    kind: Literal["auto", "dcgm", "amd"] = "auto"


class EndpointSpec(_Strict):
    name: Name
    base_url: Annotated[str, Field(pattern=_URL)]
    backend: Literal["vllm", "sglang"] = "vllm"
    model: str = Field(min_length=1)
    api_key_env: Annotated[str, Field(pattern=_ENV_VAR)] | None = None
    classes: list[Name] = Field(min_length=1)
    scrape_interval: Duration = 15.0
    metrics_path: str = "/metrics"
    deployment: DeploymentSpec = DeploymentSpec()
    #: OTLP resource ``service.name`` of this endpoint's spans (default: the endpoint's name).
    span_service_name: str | None = Field(default=None, min_length=1, max_length=200)
    #: The class real-traffic spans count for in span goodput (default: routed by context ceiling).
    span_class: Name | None = None
    #: The GPU exporter of the endpoint's GPUs (docs/collector.md "GPU pages"); none by default.
    gpu_exporter: GpuExporterSpec | None = None

    @model_validator(mode="after")
    def _span_class(self) -> EndpointSpec:
        if self.span_class is not None and self.span_class not in self.classes:
            raise ValueError(f"span_class {self.span_class!r} is not one of its classes {self.classes}")
        return self


class SLOSpec(_Strict):
    name: Name
    sli: Literal["availability", "correctness", "ttft", "itl", "tpot", "e2e", "queue_time",
                 "stall", "ttft_cold", "ttft_warm", "goodput"]  # fmt: skip
    threshold: Latency | None = None
    objective: float = Field(gt=0, lt=100)
    period: Duration = 30 * 86400.0
    source: Literal["probes", "server", "traffic"] = "probes"
    description: str = ""
    #: ``source: traffic`` only: one SLO per tenant named here (``traffic.tenants`` or ``other``),
    #: named ``<name>.<tenant>``; and per priority band (``traffic.priority_bands``).
    tenants: list[Name] = []
    priorities: list[Name] = []
    #: Valid events a burn alert's long window must hold before it may fire (default: derived).
    min_events: int | None = Field(default=None, ge=1)
    #: Ticket when the budget would run out within this long at the current burn (1h and 1d windows).
    exhaustion_within: Duration | None = None
    #: A total outage (every event bad) must page within this long: lowers the first page row's
    #: burn factor (never below 1x) for objectives where the workbook's 14.4x is slow (95 %: 43 min).
    page_within: Duration | None = Field(default=None, ge=120.0, le=3600.0)

    @field_validator("period")
    @classmethod
    def _period(cls, value: float) -> float:
        if value not in (28 * 86400.0, 30 * 86400.0):
            raise ValueError(f"expected 28d or 30d, got {value / 86400:g}d")
        return value

    @model_validator(mode="after")
    def _check(self) -> SLOSpec:
        latency = self.sli not in ("availability", "correctness", "goodput")
        if latency and self.threshold is None:
            raise ValueError(f"sli {self.sli} needs a threshold (e.g. threshold: 2s)")
        if not latency and self.threshold is not None:
            raise ValueError(f"sli {self.sli} takes no threshold")
        if self.source == "server" and self.sli in PROBE_ONLY_SLIS:
            raise ValueError(f"{self.sli} can only come from probes (source: probes)")
        if self.source == "traffic" and self.sli != "goodput":
            raise ValueError(f"source: traffic measures goodput only, not {self.sli}")
        if self.source != "traffic" and (self.tenants or self.priorities):
            raise ValueError("tenants and priorities need source: traffic")
        for what, names in (("tenants", self.tenants), ("priorities", self.priorities)):
            if len(set(names)) != len(names):
                raise ValueError(f"{what}: a name is listed twice")
        return self


class PriorityBandSpec(_Strict):
    """A band of request priorities: every priority up to ``up_to`` above the previous band's
    (vLLM: a lower value is served first); the last band may leave ``up_to`` out (unbounded)."""

    name: Name
    up_to: float | None = None


class TrafficSpec(_Strict):
    """Real traffic's tenants and priorities (docs/traces.md "Tenants and priorities")."""

    #: Span attributes naming the tenant, the first one present wins (a gateway's tenant, the
    #: OpenAI ``user`` field a gateway copies).
    tenant_attributes: list[Annotated[str, Field(min_length=1, max_length=200)]] = ["tenant.id", "user.id"]
    #: Span attribute holding the request's priority (vLLM's ``priority``, set by a gateway).
    priority_attribute: str = Field(default="vllm.request.priority", min_length=1, max_length=200)
    #: The priority of a request whose span has none (vLLM's default priority is 0).
    default_priority: float = 0.0
    #: Tenants that always have a label (and may have SLOs) of their own.
    tenants: list[Name] = []
    #: Besides those, up to this many of the busiest tenants get a label of their own.
    top_tenants: int = Field(default=0, ge=0, le=1000)
    #: Requests a tenant must have sent before it may take one of the ``top_tenants`` labels.
    min_tenant_requests: int = Field(default=100, ge=1)
    #: Priority bands, ascending ``up_to``; none: every request is in band ``all``.
    priority_bands: list[PriorityBandSpec] = []

    @model_validator(mode="after")
    def _check(self) -> TrafficSpec:
        if "other" in self.tenants:
            raise ValueError("tenants: 'other' is every tenant without a label of its own, not a tenant")
        if len(set(self.tenants)) != len(self.tenants):
            raise ValueError("tenants: a tenant is listed twice")
        names = [b.name for b in self.priority_bands]
        if len(set(names)) != len(names):
            raise ValueError("priority_bands: a band name is used twice")
        bounds = [b.up_to for b in self.priority_bands]
        if any(b is None for b in bounds[:-1]):
            raise ValueError("priority_bands: only the last band may leave up_to out")
        finite = [b for b in bounds if b is not None]
        if finite != sorted(set(finite)):
            raise ValueError("priority_bands: up_to must rise from band to band")
        return self


class RetrySettings(_Strict):
    """The probes' client retry policy (docs/probes.md, "Retries"): the OpenAI Python SDK's rule.

    ``max_retries: 0`` (the default) is no retry, as before the policy existed; the SDK's own
    default is 2. The delays are the SDK's (openai-python 2.54.0, ``_constants.py``).
    """

    max_retries: int = Field(default=0, ge=0, le=10)
    initial_delay: Duration = 0.5
    max_delay: Duration = 8.0
    max_retry_after: Duration = 120.0

    @model_validator(mode="after")
    def _check(self) -> RetrySettings:
        if self.max_delay < self.initial_delay:
            raise ValueError("retry.max_delay must not be below retry.initial_delay")
        return self


class ProbeSettings(_Strict):
    interval: Duration = 60.0
    timeout: Duration = 120.0
    jitter: Duration = 5.0
    long_prompt_tokens: int | None = Field(default=None, ge=256)
    tool_delay: Duration = 0.2
    agent_rounds: int = Field(default=3, ge=1, le=10)
    retry: RetrySettings = RetrySettings()


class BudgetPolicySpec(_Strict):
    """Error-budget policy of a class: when deploys freeze (``m3mon budget gate``)."""

    #: Freeze while any SLO of the class has less than this share (percent) of its period's budget left.
    freeze_below: float = Field(default=10.0, ge=0, le=100)
    #: Freeze while a page-level burn alert condition holds for any SLO of the class.
    freeze_on_page_burn: bool = True


class RequestClassSpec(_Strict):
    name: Name
    max_context_tokens: int = Field(ge=1024)
    probes: list[Literal["chat", "tool_call", "image", "long_prompt", "reasoning", "agent_session"]] = Field(
        min_length=1
    )
    probe: ProbeSettings = ProbeSettings()
    dedicated_pool: bool = False
    description: str = ""
    slos: list[SLOSpec] = Field(min_length=1)
    budget_policy: BudgetPolicySpec | None = None

    @model_validator(mode="after")
    def _check(self) -> RequestClassSpec:
        names = [n for s in self.slos for n in traffic_slo_names(s)]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate SLO names: {', '.join(dupes)}")
        if self.probe.long_prompt_tokens and self.probe.long_prompt_tokens >= self.max_context_tokens:
            raise ValueError("probe.long_prompt_tokens must be below max_context_tokens")
        return self


class ConfigSpec(_Strict):
    version: Literal["m3mon/v1"]
    endpoints: list[EndpointSpec] = Field(min_length=1)
    request_classes: list[RequestClassSpec] = Field(min_length=1)
    storage: StorageSpec = StorageSpec()
    exporter: ExporterSpec = ExporterSpec()
    alerting: AlertingSpec = AlertingSpec()
    report: ReportSpec = ReportSpec()
    fleet: FleetSpec = FleetSpec()
    traffic: TrafficSpec = TrafficSpec()
    maintenance: list[MaintenanceSpec] = []
    #: A file of more windows (docs/maintenance.md), read with the config and on every reload.
    maintenance_file: str | None = None

    def served(self) -> dict[str, list[str]]:
        """Endpoint name -> the classes it serves."""
        return {e.name: list(e.classes) for e in self.endpoints}


def _cross_check(spec: ConfigSpec) -> list[tuple[tuple[str | int, ...], str]]:
    """Problems that span sections: unknown class references and duplicate names."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    classes = {c.name for c in spec.request_classes}
    named = {
        "endpoints": [e.name for e in spec.endpoints],
        "request_classes": [c.name for c in spec.request_classes],
    }
    for kind, names in named.items():
        for i, name in enumerate(names):
            if name in names[:i]:
                problems.append(((kind, i, "name"), f"duplicate name {name!r}"))
    for i, ep in enumerate(spec.endpoints):
        for j, cls in enumerate(ep.classes):
            if cls not in classes:
                known = ", ".join(sorted(classes))
                problems.append(
                    (("endpoints", i, "classes", j), f"unknown request class {cls!r}; known: {known}")
                )
    services = [e.span_service_name or e.name for e in spec.endpoints]
    for i, service in enumerate(services):
        if service in services[:i]:
            problems.append((("endpoints", i, "span_service_name"), f"span service name {service!r} is "
                             "another endpoint's too (it is span_service_name, else the name)"))  # fmt: skip
    creds = spec.exporter.credentials
    if creds and creds.ca_file and not spec.alerting.monitor_receiver_url.startswith("https://"):
        problems.append((("alerting", "monitor_receiver_url"), "exporter.credentials.ca_file is set (the "
                         "monitor serves TLS), so this must be an https:// URL"))  # fmt: skip
    problems += _traffic_problems(spec)
    served = {c for ep in spec.endpoints for c in ep.classes}
    for i, rc in enumerate(spec.request_classes):
        if rc.name not in served:
            problems.append((("request_classes", i, "name"), f"class {rc.name!r} is served by no endpoint"))
    if not problems:
        problems += [
            (("maintenance", *loc), msg) for loc, msg in maintenance_problems(spec.maintenance, spec.served())
        ]
    return problems


def _traffic_problems(spec: ConfigSpec) -> list[tuple[tuple[str | int, ...], str]]:
    """Traffic SLOs naming a tenant or band the ``traffic`` section does not have."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    tenants = [*spec.traffic.tenants, "other"]
    bands = [b.name for b in spec.traffic.priority_bands] or ["all"]
    for i, rc in enumerate(spec.request_classes):
        for j, slo in enumerate(rc.slos):
            at: tuple[str | int, ...] = ("request_classes", i, "slos", j)
            for k, t in enumerate(slo.tenants):
                if t not in tenants:
                    problems.append(((*at, "tenants", k), f"tenant {t!r} is not in traffic.tenants "
                                     f"({', '.join(tenants)})"))  # fmt: skip
            for k, b in enumerate(slo.priorities):
                if b not in bands:
                    problems.append(((*at, "priorities", k), f"priority band {b!r} is not in "
                                     f"traffic.priority_bands ({', '.join(bands)})"))  # fmt: skip
    return problems


def traffic_slo_names(slo: SLOSpec) -> list[str]:
    """The SLO names one spec declares: ``name``, or ``name.<tenant>[.<band>]`` per scope."""
    scopes = [(t, b) for t in slo.tenants or [""] for b in slo.priorities or [""]]
    return [".".join(p for p in (slo.name, t, b) if p) for t, b in scopes]


def parse_config(text: str, source: str = "<config>") -> ConfigSpec:
    """Validate YAML text; raise :class:`ConfigError` listing every problem with file, line and path."""
    root, data = read_yaml(text, source)
    if not isinstance(data, dict):
        raise ConfigError([f"{source}: expected a mapping with 'version: {CONFIG_VERSION}' at the top level"])
    if data.get("version") != CONFIG_VERSION:
        raise ConfigError(
            [
                f"{source}:{line_of(root, ('version',))}: version: expected {CONFIG_VERSION!r}, "
                f"got {data.get('version')!r}"
            ]
        )
    try:
        spec = ConfigSpec.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, _PATTERN_WORDS)
    else:
        problems = _cross_check(spec)
    if problems:
        raise ConfigError(problem_lines(problems, root, source))
    return spec


def parse_maintenance_file(text: str, source: str, spec: ConfigSpec | None) -> list[MaintenanceSpec]:
    """The windows of a maintenance file; with the config ``spec``, also checked against it (names
    of classes and endpoints, names unique across the config and the file)."""
    root, data = read_yaml(text, source)
    if not isinstance(data, dict):
        raise ConfigError(
            [f"{source}: expected a mapping with 'version: {CONFIG_VERSION}' and 'maintenance:'"]
        )
    try:
        doc = MaintenanceFileSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problem_lines(validation_problems(exc, _PATTERN_WORDS), root, source)) from None
    if spec is None:
        return doc.maintenance
    found = maintenance_problems([*spec.maintenance, *doc.maintenance], spec.served())
    shift = len(spec.maintenance)  # report file positions, not positions in the combined list
    if found:
        problems = [(("maintenance", int(loc[0]) - shift, *loc[1:]), msg) for loc, msg in found]
        raise ConfigError(problem_lines(problems, root, source))
    return doc.maintenance


def load_config(path: str | Path) -> ConfigSpec:
    """Read and validate a configuration file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{p}: cannot read configuration: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{p}: not UTF-8 text: byte {exc.start} cannot be decoded"]) from None
    return parse_config(text, str(p))


__all__ = [
    "CONFIG_VERSION",
    "PROBE_KINDS",
    "SLI_KINDS",
    "ConfigSpec",
    "EndpointSpec",
    "GpuExporterSpec",
    "RequestClassSpec",
    "SLOSpec",
    "load_config",
    "parse_config",
    "parse_duration",
    "parse_maintenance_file",
]
