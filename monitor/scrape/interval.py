"""Reduce readings to :class:`~monitor.scrape.signals.Signals`: one page (cumulative) or two (an interval).

Counter resets follow Prometheus per series: when a new value is below the old one, the new
value is the increase. A changed ``_created`` timestamp or ``process_start_time_seconds`` also
counts as a reset. Either way the interval is marked ``reset=True`` and nothing is negative.
Raw series are then summed per canonical field, per engine, and over engines (``total``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from monitor.scrape.reading import RATIO_GAUGES, EngineReading, Reading, SeriesKey
from monitor.scrape.signals import EngineSignals, Histogram, Signals

_SCALARS = ("prompt_tokens", "generation_tokens", "preemptions", "prefix_cache_queries",
            "prefix_cache_hits", "spec_drafts", "spec_draft_tokens", "spec_accepted_tokens",
            "admission_rejections")  # fmt: skip
_GAUGES = ("running", "waiting", "kv_cache_usage", "reported_prefix_cache_hit_rate",
           "reported_spec_accept_rate", "reported_spec_accept_length")  # fmt: skip


@dataclass
class _Sums:
    """Per-field sums of one engine (or of all engines) before they become EngineSignals."""

    counters: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    histograms: dict[str, Histogram] = field(default_factory=dict)
    gauges: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    notes: list[str] = field(default_factory=list)

    def add_histogram(self, name: str, h: Histogram) -> None:
        have = self.histograms.get(name)
        if have is None:
            self.histograms[name] = h
        elif have.edges == h.edges:
            self.histograms[name] = have.plus(h)
        else:
            self.notes.append(f"{name}: series with different buckets; kept the larger one")
            if h.count > have.count:
                self.histograms[name] = h


def _changed(old: float | None, new: float | None) -> bool:
    return old is not None and new is not None and abs(old - new) > 1e-6


def _created(reading: EngineReading | None, key: SeriesKey) -> float | None:
    return None if reading is None else reading.created.get(key)


def _position(item: tuple[str, float]) -> int:
    return int(item[0]) if item[0].isdigit() else 0


def _increases(old: EngineReading | None, new: EngineReading, restarted: bool) -> tuple[_Sums, bool]:
    """Per-field increases of one engine since ``old`` (None: totals since start)."""
    sums, reset = _Sums(), False
    for key, value in new.counters.items():
        before = None if old is None else old.counters.get(key)
        if before is None:
            inc = value
        elif restarted or value < before or _changed(_created(old, key), new.created.get(key)):
            inc, reset = value, True
        else:
            inc = value - before
        sums.counters[key[0]] += inc
    for key, h in new.histograms.items():
        sums.add_histogram(key[0], _histogram_increase(old, new, key, h, restarted))
        prior = None if old is None else old.histograms.get(key)
        reset = reset or (prior is not None and _histogram_reset(old, new, key, prior, h, restarted))
    for name, value in new.gauges.items():
        sums.gauges[name].append(value)
    return sums, reset


def _histogram_reset(
    old: EngineReading | None,
    new: EngineReading,
    key: SeriesKey,
    prior: Histogram,
    h: Histogram,
    restarted: bool,
) -> bool:
    if restarted or prior.edges != h.edges or h.count < prior.count:
        return True
    if any(b < a for a, b in zip(prior.counts, h.counts, strict=True)):
        return True
    return _changed(_created(old, key), new.created.get(key))


def _histogram_increase(
    old: EngineReading | None, new: EngineReading, key: SeriesKey, h: Histogram, restarted: bool
) -> Histogram:
    prior = None if old is None else old.histograms.get(key)
    if prior is None or _histogram_reset(old, new, key, prior, h, restarted):
        return h
    return h.minus(prior)


def _engine_signals(sums: _Sums) -> EngineSignals:
    c = sums.counters
    finished = {k.split(":", 1)[1]: v for k, v in c.items() if k.startswith("finished:")}
    if not finished and "finished_all" in c:
        abort = c.get("finished_abort", 0.0)
        finished = {"completed": max(0.0, c["finished_all"] - abort), "abort": abort}
    per_pos = {k.split(":", 1)[1]: v for k, v in c.items() if k.startswith("spec_accepted_per_position:")}
    http = {k.split(":", 1)[1]: v for k, v in c.items() if k.startswith("http:")}
    gauges = {k: (sum(v) / len(v) if k in RATIO_GAUGES else sum(v)) for k, v in sums.gauges.items() if v}
    return EngineSignals(
        finished=finished,
        histograms=dict(sorted(sums.histograms.items())),
        spec_accepted_per_position=dict(sorted(per_pos.items(), key=_position)),
        http_status=dict(sorted(http.items())),
        **{k: c.get(k) for k in _SCALARS},
        **{k: gauges.get(k) for k in _GAUGES},
    )


def _merge(parts: list[_Sums]) -> _Sums:
    total = _Sums()
    for p in parts:
        for k, v in p.counters.items():
            total.counters[k] += v
        for name, h in p.histograms.items():
            total.add_histogram(name, h)
        for k, vs in p.gauges.items():
            total.gauges[k].append(sum(vs) / len(vs) if k in RATIO_GAUGES else sum(vs))
        total.notes.extend(p.notes)
    return total


def pick_model(reading: Reading, wanted: str | None) -> str | None:
    """The page's model to report for an endpoint serving ``wanted``; None = sum of all models.

    The configured model if the page has it; else the only model on the page; else None.
    """
    if wanted is not None and wanted in reading.models:
        return wanted
    if len(reading.models) == 1:
        return next(iter(reading.models))
    return None


def signals(
    endpoint: str, newer: Reading, older: Reading | None = None, *, model: str | None = None
) -> Signals:
    """Signals of ``model`` (see :func:`pick_model`) between ``older`` and ``newer``, or cumulative."""
    chosen = pick_model(newer, model)
    names = [chosen] if chosen is not None else list(newer.models)
    restarted = older is not None and _changed(older.process_start, newer.process_start)
    engines: dict[str, _Sums] = {}
    reset = restarted
    for name in names:
        for engine, er in newer.models[name].items():
            before = None if older is None else older.models.get(name, {}).get(engine)
            sums, r = _increases(before, er, restarted)
            reset = reset or r
            engines[engine if chosen is not None else f"{name}/{engine}"] = sums
    total = _merge(list(engines.values()))
    notes = list(newer.notes) + total.notes
    if chosen is None and len(names) > 1:
        notes.append(f"model {model!r} not on the page; summed over models {', '.join(names)}")
    if older is not None and newer.time <= older.time:
        notes.append("older reading is not older than the newer one; rates omitted")
    return Signals(
        endpoint=endpoint,
        backend=newer.backend,
        generation=newer.generation,
        model=chosen,
        end=newer.time,
        start=older.time if older is not None else None,
        reset=reset,
        engines={k: _engine_signals(v) for k, v in engines.items()},
        total=_engine_signals(total),
        notes=tuple(notes),
    )


def signals_by_model(endpoint: str, newer: Reading, older: Reading | None = None) -> dict[str, Signals]:
    """One :class:`Signals` per ``model_name`` on the page (pages serving several models)."""
    return {m: signals(endpoint, newer, older, model=m) for m in newer.models}
