"""PromQL in OpenSLO metric sources: written from :mod:`monitor.events`, and attributed back to it.

Export: a counter SLI (availability, correctness) becomes a ``ratioMetric`` whose ``total`` query
selects the valid events' series and whose ``bad`` query the bad ones; a latency SLI becomes a
``thresholdMetric`` over the histogram's buckets, the threshold being the objective's ``value``.

Import (:func:`attribute_counter`, :func:`attribute_histogram`): a query maps onto an SLI when it
reads exactly the metric and matchers that SLI's event definition reads, plus only the labels
that pick the class's series (``job``, ``class``, ``endpoint``). Anything else (another metric, a
narrowing matcher, a Datadog query) cannot be attributed to a request class and is refused.

Those scope labels must then name only the class's series (:func:`scope_problems`, for every
query of the SLI: total, bad or good, threshold), as the rules read them (:class:`Scope`):

* ``job``, if present, is exactly the job the SLI's events come from: the monitor's job
  (``alerting.prometheus_job_monitor``, default ``m3mon``) for probe SLIs, the vLLM job
  (``alerting.prometheus_job_vllm``, default ``vllm``) for server SLIs; ``=~`` with that one value
  counts as ``=``, any other value or a negative matcher names other series.
* ``endpoint``, if present, is ``=``/``=~`` with only endpoints that serve the class (probe series
  carry the label too); a negative matcher selects every other endpoint and cannot be attributed.
* ``class`` names exactly the class: probe queries must carry it (without it they read every
  class's probes), and on server queries (vLLM series have no such label) any other value is
  another class's series.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from monitor import conventions as cv
from monitor import events
from monitor.generate import promql as q
from monitor.model import SLO, Model

_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
#: Labels that only choose whose series are read (the class's), never which events count.
SCOPE_LABELS = (cv.L_JOB, cv.L_CLASS, cv.L_ENDPOINT)
_HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")

Matcher = tuple[str, str, frozenset[str]]


@dataclass(frozen=True)
class Selector:
    metric: str
    matchers: tuple[Matcher, ...]
    written: tuple[str, ...] = ()  # each matcher as the query spells it, e.g. ``endpoint!="b"``

    def scope(self, label: str) -> Matcher | None:
        return next((m for m in self.matchers if m[0] == label), None)

    def events(self) -> frozenset[Matcher]:
        return frozenset(m for m in self.matchers if m[0] not in SCOPE_LABELS)


def _base(model: Model, slo: SLO) -> list[tuple[str, str]]:
    if slo.from_monitor:
        return [(cv.L_JOB, q.eq(model.alerting.job_monitor)), (cv.L_CLASS, q.eq(slo.request_class))]
    return q.pool_matchers(model, slo)


def _render(m: events.Match) -> tuple[str, str]:
    return m.label, (q.not_regex(m.values) if m.negate else q.regex(m.values))


def _as_matcher(m: events.Match) -> Matcher:
    return m.label, "!~" if m.negate else "=~", frozenset(m.values)


def counter_queries(model: Model, rule: events.CounterEvents, slo: SLO) -> tuple[str, str]:
    """(total, bad) queries of a counter SLI."""
    base = _base(model, slo)
    total = rule.metric + q.matchers([*base, *map(_render, rule.valid)])
    bad = rule.metric + q.matchers([*base, *map(_render, (*rule.valid, *rule.bad))])
    return f"sum({total})", f"sum({bad})"


def histogram_query(model: Model, rule: events.HistogramEvents, slo: SLO) -> str:
    pairs = [*_base(model, slo), *map(_render, rule.select)]
    return f"sum by (le) ({rule.metric}_bucket{q.matchers(pairs)})"


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse(query: str) -> Selector | None:
    """The one selector of ``query`` (None when there is none, or more than one metric)."""
    found = _SELECTOR.findall(query)
    if len({name for name, _ in found}) != 1:
        return None
    name, body = found[0]
    out: list[Matcher] = []
    written: list[str] = []
    for label, op, raw in _MATCHER.findall(body):
        value = _unquote(raw)
        values = (
            frozenset(_unquote(v) for v in value.split("|")) if op in ("=~", "!~") else frozenset({value})
        )
        out.append((label, "=~" if op == "=" else ("!~" if op == "!=" else op), values))
        written.append(f'{label}{op}"{raw}"')
    return Selector(name, tuple(out), tuple(written))


def _candidates(request_class: str, threshold: float | None) -> list[SLO]:
    out = []
    for sli in cv.SLI_KINDS:
        latency = sli in cv.LATENCY_SLIS
        if latency != (threshold is not None):
            continue
        for source in ("probes", "server", "traffic"):
            if source == "server" and sli in cv.PROBE_ONLY_SLIS:
                continue
            if source == "traffic" and sli != "goodput":
                continue
            out.append(SLO(request_class, "x", sli, 0.99, 30 * 86400.0, source, threshold))
    return out


def _definition(slo: SLO) -> events.Definition | None:
    try:
        return events.definition(slo)
    except (KeyError, AssertionError, ValueError):
        return None


def _good(rule: events.CounterEvents) -> frozenset[Matcher]:
    """Matchers of the good events: valid and not bad (a bad label's values join the excluded ones)."""
    out = set(map(_as_matcher, rule.valid))
    for m in rule.bad:
        if m.negate:
            return frozenset()  # "bad = not X" has no one-matcher complement
        same = next((v for v in out if v[0] == m.label and v[1] == "!~"), None)
        if same is not None:
            out.discard(same)
        out.add((m.label, "!~", frozenset(m.values) | (same[2] if same else frozenset())))
    return frozenset(out)


def attribute_counter(
    request_class: str, total: Selector, bad: Selector | None, good: Selector | None
) -> list[SLO]:
    """The counter SLIs whose valid events ``total`` selects, and bad (or good) events ``bad`` (``good``).

    A bad query may leave out the valid matchers (``reason=~"timeout|…"`` already excludes the
    monitor's own errors).
    """
    out = []
    for slo in _candidates(request_class, None):
        rule = _definition(slo)
        if not isinstance(rule, events.CounterEvents) or total.metric != rule.metric:
            continue
        valid, bad_only = frozenset(map(_as_matcher, rule.valid)), frozenset(map(_as_matcher, rule.bad))
        if total.events() != valid:
            continue
        bad_ok = (
            bad is not None and bad.metric == rule.metric and bad.events() in (bad_only, valid | bad_only)
        )
        good_ok = good is not None and good.metric == rule.metric and good.events() == _good(rule)
        if bad_ok or good_ok:
            out.append(slo)
    return out


def attribute_histogram(request_class: str, selector: Selector, threshold: float) -> list[SLO]:
    """The latency SLIs whose histogram series ``selector`` reads (scope labels aside, exactly theirs)."""
    metric = selector.metric
    for suffix in _HISTOGRAM_SUFFIXES:
        metric = metric.removesuffix(suffix)
    out = []
    for slo in _candidates(request_class, threshold):
        rule = _definition(slo)
        if not isinstance(rule, events.HistogramEvents) or rule.metric != metric:
            continue
        if selector.events() == frozenset(map(_as_matcher, rule.select)):
            out.append(slo)
    return out


def class_matches(slo: SLO, selector: Selector) -> bool:
    """Probe queries must select the class's series by its ``class`` label."""
    if not slo.from_monitor:
        return True
    return selector.scope(cv.L_CLASS) == (cv.L_CLASS, "=~", frozenset({slo.request_class}))


@dataclass(frozen=True)
class Scope:
    """Whose series the rules read: the monitor's and vLLM's jobs, and each class's endpoints."""

    job_monitor: str
    job_vllm: str
    endpoints: dict[str, frozenset[str]]  # class -> the names of the endpoints that serve it

    def job(self, slo: SLO) -> str:
        return self.job_monitor if slo.from_monitor else self.job_vllm


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f'"{v}"' for v in sorted(values))


def _foreign(slo: SLO, scope: Scope, matcher: Matcher) -> str | None:
    """Why a scope matcher selects other series than ``slo``'s class's (None: it does not)."""
    label, op, values = matcher
    if label == cv.L_JOB and (op, values) != ("=~", frozenset({scope.job(slo)})):
        whose = "the monitor's" if slo.from_monitor else "the vLLM"
        return f'{whose} job is "{scope.job(slo)}"'
    if label == cv.L_CLASS and (op, values) != ("=~", frozenset({slo.request_class})):
        return f'the class is "{slo.request_class}"'
    pools = scope.endpoints.get(slo.request_class, frozenset())
    if label != cv.L_ENDPOINT or (op == "=~" and values <= pools):
        return None
    served = (
        f'class "{slo.request_class}" is served by {_quoted(pools)}'
        if pools
        else f'no endpoint serves class "{slo.request_class}"'
    )
    return served if op == "=~" else f"a negative matcher selects every other endpoint; {served}"


def scope_problems(slo: SLO, selector: Selector, scope: Scope) -> list[str]:
    """Why ``selector`` reads other series than ``slo``'s class's: one line per matcher at fault."""
    out = []
    for matcher, written in zip(selector.matchers, selector.written, strict=True):
        why = _foreign(slo, scope, matcher)
        if why is not None:
            out.append(f"{written} names other series than this class's ({why})")
    if slo.from_monitor and selector.scope(cv.L_CLASS) is None:
        out.append(
            "no class matcher: the query reads the probe series of every class "
            f'(add class="{slo.request_class}")'
        )
    return out
