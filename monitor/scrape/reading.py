"""A :class:`Reading`: what one validated page says, in canonical fields, per model and engine.

Raw series are kept (not yet summed) for counters and histograms, so an interval can apply
Prometheus' per-series counter-reset rule before summing over the labels the canonical fields
ignore (``is_streaming``, ``pid``, ...). Gauges are already reduced to one value per field.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from monitor.errors import ScrapeError
from monitor.scrape.drift import Surface, surface
from monitor.scrape.names import (
    CACHE_CONFIG_INFO,
    DEFAULT_ENGINE,
    ENGINE_LABELS,
    MODEL_LABEL,
    MODELLESS_FIELDS,
    PREFIXES,
    PROCESS_START,
    RANK_LABELS,
    SAMPLE_INDEX,
    V0_ONLY,
    V0_RUNNING_HELP,
    Source,
)
from monitor.scrape.page import Page, Sample, histogram_problem
from monitor.scrape.signals import Histogram

SeriesKey = tuple[str, str]  # (canonical field, series id made of the ignored labels)

#: Gauges averaged (not summed) when several series or engines report them: they are ratios.
RATIO_GAUGES = frozenset(
    {"kv_cache_usage", "reported_prefix_cache_hit_rate", "reported_spec_accept_rate",
     "reported_spec_accept_length", "block_size", "max_model_len"}
)  # fmt: skip


@dataclass(frozen=True)
class EngineReading:
    """Raw canonical series of one engine of one model."""

    counters: dict[SeriesKey, float] = field(default_factory=dict)
    histograms: dict[SeriesKey, Histogram] = field(default_factory=dict)
    created: dict[SeriesKey, float] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Reading:
    """One page of one endpoint, read at wall-clock ``time``."""

    time: float
    backend: str
    generation: str
    models: dict[str, dict[str, EngineReading]]
    process_start: float | None = None
    cache_config: dict[str, dict[str, str]] = field(default_factory=dict)  # engine -> labels
    notes: tuple[str, ...] = ()
    #: what the page served (families, checked label values): the drift guard's input; not stored
    surface: Surface | None = None


@dataclass
class _Builder:
    """Mutable accumulation while walking the samples of a page."""

    counters: dict[tuple[str, str, int], dict[SeriesKey, float]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    created: dict[tuple[str, str, int], dict[SeriesKey, float]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    buckets: dict[tuple[str, str, int], dict[SeriesKey, dict[str, list[tuple[str, float]]]]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    gauges: dict[tuple[str, str, int], dict[str, list[float]]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    #: (model, engine, field) -> lowest rank seen (the newest name generation present)
    ranks: dict[tuple[str, str, str], int] = field(default_factory=dict)


_SKIP = frozenset({MODEL_LABEL, "le", *ENGINE_LABELS})

#: What the labels of a sample say regardless of its family: (model, engine, ranks are all 0).
_Facts = tuple[str, str, bool]


def _facts(labels: dict[str, str]) -> _Facts:
    model = labels.get(MODEL_LABEL, "")
    engine = next((labels[k] for k in ENGINE_LABELS if k in labels), DEFAULT_ENGINE)
    return model, engine, all(labels.get(r, "0") == "0" for r in RANK_LABELS)


def _series_id(labels: dict[str, str], key: str | None) -> str:
    """The labels a canonical field sums over, as one string."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in _SKIP and k != key)


_FACTS: dict[tuple[tuple[str, str], ...], tuple[_Facts, dict[str | None, str]]] = {}


class _Memo:
    """Label facts and series ids, memoised per page by dict identity (the fast parser shares equal
    label dicts) and across pages by content (a server repeats its label sets every scrape)."""

    def __init__(self) -> None:
        self.page: dict[int, tuple[_Facts, dict[str | None, str]]] = {}

    def entry(self, labels: dict[str, str]) -> tuple[_Facts, dict[str | None, str]]:
        found = self.page.get(id(labels))
        if found is None:
            content = tuple(labels.items())
            found = _FACTS.get(content)
            if found is None:
                if len(_FACTS) > 50_000:
                    _FACTS.clear()
                found = _FACTS[content] = (_facts(labels), {})
            self.page[id(labels)] = found
        return found


def _add(b: _Builder, s: Sample, src: Source, part: str, entry: tuple[_Facts, dict[str | None, str]]) -> None:
    (model, engine, _), ids = entry
    fname = f"{src.field}:{s.labels.get(src.key, '')}" if src.key else src.field
    slot = (model, engine, src.rank)
    if part != "created":
        rank_key = (model, engine, src.field)
        best = b.ranks.get(rank_key)
        if best is None or src.rank < best:
            b.ranks[rank_key] = src.rank
    sid = ids.get(src.key)
    if sid is None:
        sid = ids[src.key] = _series_id(s.labels, src.key)
    key = (fname, sid)
    if part == "created":
        b.created[slot][key] = s.value
    elif src.kind == "counter":
        b.counters[slot][key] = s.value
    elif src.kind == "gauge":
        b.gauges[slot].setdefault(fname, []).append(s.value)
    else:
        b.buckets[slot].setdefault(key, {}).setdefault(part, []).append((s.labels.get("le", ""), s.value))


def _checked(s: Sample, src: Source) -> bool:
    """Whether to use a sample; a counter that is not a finite count makes the page garbled."""
    v = s.value
    if src.kind == "gauge" and src.field.startswith("reported_"):
        return math.isfinite(v) and v >= 0  # V0 reports -1 for "no data"
    if src.kind == "gauge" and src.field not in ("running", "waiting", "kv_cache_usage"):
        return True
    if not math.isfinite(v) or v < 0:
        raise ScrapeError("garbled", f"{s.name}{s.labels} = {v} is not a count")
    return True


def _histogram(key: SeriesKey, parts: dict[str, list[tuple[str, float]]]) -> Histogram | None:
    """A validated histogram, None if the series has no buckets (only _sum/_created)."""
    if "bucket" not in parts and "count" not in parts:
        return None
    problem = histogram_problem(parts)
    if problem:
        raise ScrapeError("garbled", f"histogram {key[0]} {{{key[1]}}}: {problem}")
    buckets = sorted((float(le), c) for le, c in parts["bucket"])
    total = parts.get("sum", [("", math.nan)])[0][1]
    return Histogram(tuple(e for e, _ in buckets), tuple(c for _, c in buckets), total, parts["count"][0][1])


def _generation(page: Page, saw_engine: bool) -> tuple[str, str]:
    types = page.types
    names = {s.name for s in page.samples} | set(types)
    if any(n.startswith("sglang:") for n in names):
        return "sglang", "sglang"
    if names & V0_ONLY or page.helps.get("vllm:num_requests_running") == V0_RUNNING_HELP:
        return "vllm", "vllm-v0"
    return "vllm", "vllm-v1-engine" if saw_engine else "vllm-v1"


def _field_of(fname: str) -> str:
    return fname.split(":", 1)[0]


def read_page(page: Page, time: float) -> Reading:
    """Map a validated page onto canonical fields; ScrapeError if nothing on it is recognised."""
    b = _Builder()
    process_start: float | None = None
    cache_config: dict[str, dict[str, str]] = {}
    saw_engine = False
    memo = _Memo()
    for s in page.samples:
        hits = SAMPLE_INDEX.get(s.name)
        if hits is None:
            if s.name == PROCESS_START:
                process_start = s.value
            elif s.name == CACHE_CONFIG_INFO:
                cache_config[s.labels.get("engine", DEFAULT_ENGINE)] = dict(s.labels)
            continue
        labels = s.labels
        saw_engine = saw_engine or "engine" in labels
        entry = memo.entry(labels)
        if not entry[0][2]:
            continue  # an SGLang rank other than 0 repeats rank 0's requests
        for src, part in hits:
            if src.where and any(labels.get(k) != v for k, v in src.where):
                continue
            if part == "created" or _checked(s, src):
                _add(b, s, src, part, entry)
    if not b.ranks and not cache_config:
        families = sorted({n for n in page.types if n.startswith(PREFIXES)})[:5]
        raise ScrapeError("garbled", f"no recognised vLLM/SGLang families (saw {families or 'none'})")
    backend, generation = _generation(page, saw_engine)
    return Reading(time, backend, generation, _assemble(b), process_start, cache_config, tuple(page.notes),
                   surface(page))  # fmt: skip


def _assemble(b: _Builder) -> dict[str, dict[str, EngineReading]]:
    models: dict[str, dict[str, EngineReading]] = defaultdict(dict)
    slots = set(b.counters) | set(b.buckets) | set(b.gauges)
    for model, engine, rank in slots:
        er = models[model].setdefault(engine, EngineReading())

        def wanted(fname: str, model: str = model, engine: str = engine, rank: int = rank) -> bool:
            return b.ranks.get((model, engine, _field_of(fname))) == rank

        slot = (model, engine, rank)
        er.counters.update({k: v for k, v in b.counters.get(slot, {}).items() if wanted(k[0])})
        er.created.update({k: v for k, v in b.created.get(slot, {}).items() if wanted(k[0])})
        for key, parts in b.buckets.get(slot, {}).items():
            h = _histogram(key, parts) if wanted(key[0]) else None
            if h is not None:
                er.histograms[key] = h
        for fname, values in b.gauges.get(slot, {}).items():
            if wanted(fname):
                er.gauges[fname] = sum(values) / len(values) if fname in RATIO_GAUGES else sum(values)
    _fold_modelless(models)
    return {m: dict(sorted(e.items())) for m, e in sorted(models.items())}


def _fold_modelless(models: dict[str, dict[str, EngineReading]]) -> None:
    """Server-wide families without a model label (MODELLESS_FIELDS: the API server's HTTP answers)
    belong to the page's one model; with several models on one page they are not attributed."""
    loose = models.get("")
    if loose is None:
        return
    named = [m for m in models if m]
    for engine, er in loose.items():
        keys = [k for k in er.counters if _field_of(k[0]) in MODELLESS_FIELDS]
        moved = {k: er.counters.pop(k) for k in keys}
        created = {k: er.created.pop(k) for k in keys if k in er.created}
        if len(named) == 1:
            target = models[named[0]].setdefault(engine, EngineReading())
            target.counters.update(moved)
            target.created.update(created)
    if all(not (er.counters or er.created or er.histograms or er.gauges) for er in loose.values()):
        del models[""]
