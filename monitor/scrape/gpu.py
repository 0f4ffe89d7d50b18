"""A GPU exporter page (dcgm-exporter or AMD device metrics exporter) read into per-GPU fields.

The page is parsed and validated by :func:`monitor.scrape.page.parse` like any ``/metrics`` page,
then mapped with the table of :mod:`monitor.scrape.gpu_names`. A page with neither exporter's
families is a ``ScrapeError("garbled")``. :mod:`monitor.scrape.gpu_signals` reduces one or two
readings to per-GPU and per-endpoint signals.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from monitor.errors import ScrapeError
from monitor.scrape.gpu_names import (
    AMD_MARKERS,
    AMD_SOURCES,
    DCGM_PREFIX,
    DCGM_SOURCES,
    LABELS,
    MAX_FIELDS,
    RATIO_FIELDS,
    Exporter,
    GpuSource,
    is_blank,
)
from monitor.scrape.page import Page, Sample, parse

EXPORTER_KINDS = ("auto", "dcgm", "amd")


@dataclass(frozen=True)
class GpuDevice:
    """One GPU (or MIG/partition instance) as one page shows it."""

    gpu: str
    uuid: str | None = None
    model: str | None = None
    host: str | None = None  # the exporter's hostname label (a page may hold several hosts)
    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuReading:
    time: float
    exporter: Exporter
    devices: dict[str, GpuDevice]
    driver_version: str | None = None
    firmware_version: str | None = None
    hostname: str | None = None
    prefix: str = ""  # AMD's MetricsFieldPrefix, when the page uses one
    notes: tuple[str, ...] = ()

    @property
    def model(self) -> str | None:
        return next((d.model for d in self.devices.values() if d.model), None)


def detect(page: Page) -> tuple[Exporter, str] | None:
    """(exporter, AMD name prefix) of a page, or None when it is neither exporter's page."""
    names = {s.name for s in page.samples} | set(page.types)
    if any(n.startswith(DCGM_PREFIX) for n in names):
        return "dcgm", ""
    for n in sorted(names):
        for marker in AMD_MARKERS:
            if n.endswith(marker) and not n.startswith(("vllm:", "sglang:")):
                return "amd", n[: -len(marker)]
    return None


def is_gpu_page(text: str) -> bool:
    """Whether ``text`` (any parsable page) is a GPU exporter's page rather than an engine's."""
    try:
        return detect(parse(text, partial=True)) is not None
    except ScrapeError:
        return False


def _first(labels: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((labels[n] for n in names if labels.get(n)), None)


def _key(labels: dict[str, str], names: tuple[str, ...]) -> str | None:
    parts = [labels[n] for n in names if labels.get(n)]
    return "/".join(parts) if parts and names[0] in labels else None


@dataclass
class _Acc:
    host: str | None = None
    uuid: str | None = None
    model: str | None = None
    values: dict[tuple[str, str, int], list[float]] = field(default_factory=lambda: defaultdict(list))


def read_gpu_page(page: Page, at: float, kind: str = "auto") -> GpuReading:
    """Map a validated page onto per-GPU fields; ScrapeError when it is not the expected exporter's."""
    found = detect(page)
    if found is None or (kind != "auto" and found[0] != kind):
        families = sorted(page.types)[:5]
        want = "dcgm-exporter or AMD device metrics exporter" if kind == "auto" else f"{kind} exporter"
        raise ScrapeError("garbled", f"no {want} families (saw {families or 'none'})")
    exporter, prefix = found
    labels = LABELS[exporter]
    table = {prefix + s.metric: s for s in (DCGM_SOURCES if exporter == "dcgm" else AMD_SOURCES)}
    devices: dict[tuple[str, str], _Acc] = defaultdict(_Acc)
    facts: dict[str, str] = {}
    blanks = 0
    for s in page.samples:
        src = table.get(s.name)
        gpu = _key(s.labels, labels.gpu)
        _facts(facts, s, labels)
        if gpu is None:
            continue
        host = _first(s.labels, labels.hostname) or ""
        acc = devices[(host, gpu)]  # every GPU the page shows counts, mapped families or not
        acc.host = host or None
        acc.uuid = acc.uuid or _first(s.labels, labels.uuid)
        acc.model = acc.model or _first(s.labels, labels.model)
        if src is None:
            continue
        if exporter == "dcgm" and is_blank(s.value):
            blanks += 1
            continue
        acc.values[(src.field, src.kind, src.rank)].append(s.value * src.scale)
    notes = (f"{blanks} DCGM blank value(s) (no reading) skipped",) if blanks else ()
    return GpuReading(
        time=at,
        exporter=exporter,
        devices=_keyed(devices),
        driver_version=facts.get("driver"),
        firmware_version=facts.get("firmware"),
        hostname=facts.get("hostname"),
        prefix=prefix,
        notes=notes + tuple(page.notes),
    )


def _facts(facts: dict[str, str], s: Sample, labels: object) -> None:
    for key in ("driver", "firmware", "hostname"):
        if key not in facts:
            value = _first(s.labels, getattr(labels, key))
            if value:
                facts[key] = value


def _keyed(devices: dict[tuple[str, str], _Acc]) -> dict[str, GpuDevice]:
    """GPUs by index; on a page of several hosts (a federated or proxied exporter) by
    ``host/index``, so that GPU 0 of one host is never merged with GPU 0 of another."""
    hosts = {h for h, _ in devices}
    out = {}
    for (host, gpu), acc in sorted(devices.items(), key=lambda kv: (kv[0][0], _order(kv[0][1]))):
        key = f"{host}/{gpu}" if len(hosts) > 1 else gpu
        out[key] = _device(key, acc)
    return out


def _order(gpu: str) -> tuple[int, str]:
    head = gpu.split("/", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, gpu)


def _device(gpu: str, acc: _Acc) -> GpuDevice:
    best: dict[str, int] = {}
    for fname, _, rank in acc.values:
        best[fname] = min(rank, best.get(fname, rank))
    gauges: dict[str, float] = {}
    counters: dict[str, float] = {}
    for (fname, kind, rank), values in acc.values.items():
        if rank != best[fname]:
            continue
        if fname in MAX_FIELDS:
            value = max(values)
        elif fname in RATIO_FIELDS:
            value = sum(values) / len(values)
        else:
            value = sum(values)
        target = counters if kind == "counter" else gauges
        target[fname] = target.get(fname, 0.0) + value
    return GpuDevice(gpu, acc.uuid, acc.model, acc.host, dict(sorted(gauges.items())),
                     dict(sorted(counters.items())))  # fmt: skip


def read_gpu_text(text: str, at: float, kind: str = "auto", *, partial: bool = False) -> GpuReading:
    """Parse, validate and read a GPU exporter page taken at wall-clock ``at``."""
    return read_gpu_page(parse(text, partial=partial), at, kind)


__all__ = ["EXPORTER_KINDS", "GpuDevice", "GpuReading", "GpuSource", "detect", "is_gpu_page",
           "read_gpu_page", "read_gpu_text"]  # fmt: skip
