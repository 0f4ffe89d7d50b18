"""What a burn-rate notification says beyond its summary: what burned, how fast, and where.

Each SLO burn alert (page and ticket) carries, as annotations templated from the rules (Prometheus'
and vmalert's ``query`` template function, read when the alert is sent):

* ``burn_rates`` — the burn rate of both windows of every row of its severity, and the factor it
  pages (or tickets) above: ``1h 500.0x, 5m 500.0x (over 14.4x)``; ``no data`` for a window
  without events;
* ``budget_left`` — the share of the period's error budget left;
* ``exhaustion`` — at the burn of the last hour, how long the rest of the budget lasts;
* ``endpoints`` — the endpoints with bad events over the first row's long window, with their
  count (at most :data:`TOP_ENDPOINTS`; from the SLO's per-target cumulative records);
* ``dashboard`` — the SLO dashboard of the class in Grafana (``alerting.grafana_url``);
* ``requests`` — the bad requests behind it (failed first, then the slowest of the last 15 min,
  up to 3): trace id, endpoint, outcome, the SLI's value and where the time went, and a trace link
  with ``alerting.trace_url`` (the monitor's ``m3mon_slo_request_info``, published while the SLO's
  1h window holds bad events; ``m3mon traces --slo`` lists more).

An annotation is a sequence of :data:`Part` s, so the Go template the rule carries and the text a
test expects from the store's numbers (:func:`render`) come from one description. Numbers are
printed with ``printf``, not ``humanize*``, so Python renders them the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate import windows as win
from monitor.model import SLO, Model
from monitor.slo import burn

TOP_ENDPOINTS = 3
SLO_DASHBOARD_UID = "m3mon-slo"
NO_DATA = "no data"

#: What a number reports: ("burn", window), ("budget",), ("exhaustion", window), ("endpoints", window).
Key = tuple[str, ...]
#: The values a rendered annotation shows, by key (endpoints: (endpoint, bad events) pairs).
Figures = Mapping[Key, "float | tuple[tuple[str, float], ...] | tuple[RequestFigure, ...] | None"]


@dataclass(frozen=True)
class Number:
    """One value read with ``query`` when the alert is sent, printed as ``fmt`` then ``unit``."""

    key: Key
    query: str
    fmt: str = "%.1f"
    unit: str = ""


@dataclass(frozen=True)
class Endpoints:
    """Every series of ``query`` (one per endpoint): ``name count, name count`` or ``none``."""

    key: Key
    query: str


@dataclass(frozen=True)
class Requests:
    """Every series of ``query`` (one per request, value = rank): ``trace (endpoint outcome: stages)``."""

    key: Key
    query: str


Part = str | Number | Endpoints | Requests
#: A request as the notification shows it: (trace id, endpoint, outcome, stages, link).
RequestFigure = tuple[str, str, str, str, str]


def template(parts: Sequence[Part]) -> str:
    """The annotation as Prometheus (and vmalert) templates it."""
    out = []
    for p in parts:
        if isinstance(p, Number):
            shown = f'{{{{ . | first | value | printf "{p.fmt}" }}}}{p.unit}'
            out.append(f"{{{{ with query `{p.query}` }}}}{shown}{{{{ else }}}}{NO_DATA}{{{{ end }}}}")
        elif isinstance(p, Endpoints):
            each = '{{ if $i }}, {{ end }}{{ $s.Labels.endpoint }} {{ printf "%.0f" $s.Value }}'
            out.append(f"{{{{ range $i, $s := query `{p.query}` }}}}{each}{{{{ else }}}}none{{{{ end }}}}")
        elif isinstance(p, Requests):
            each = ("{{ if $i }}; {{ end }}{{ $s.Labels.trace_id }} ({{ $s.Labels.endpoint }} "
                    "{{ $s.Labels.outcome }}: {{ $s.Labels.stages }}){{ if $s.Labels.link }} "
                    "{{ $s.Labels.link }}{{ end }}")  # fmt: skip
            out.append(f"{{{{ range $i, $s := query `{p.query}` }}}}{each}{{{{ else }}}}none{{{{ end }}}}")
        else:
            out.append(p)
    return "".join(out)


def _number(fmt: str, value: float) -> str:
    if math.isinf(value):  # Go's printf
        return "+Inf" if value > 0 else "-Inf"
    return fmt % value


def render(parts: Sequence[Part], figures: Figures) -> str:
    """The text the template gives when its queries return ``figures``."""
    out = []
    for p in parts:
        if isinstance(p, Number):
            value = figures.get(p.key)
            assert not isinstance(value, tuple)
            out.append(NO_DATA if value is None else _number(p.fmt, value) + p.unit)
        elif isinstance(p, Endpoints):
            pairs = figures.get(p.key) or ()
            assert isinstance(pairs, tuple)
            out.append(", ".join(f"{name} {count:.0f}" for name, count in pairs) or "none")  # type: ignore[misc]
        elif isinstance(p, Requests):
            found = figures.get(p.key) or ()
            assert isinstance(found, tuple)
            shown = [f"{t} ({e} {o}: {st})" + (f" {link}" if link else "") for t, e, o, st, link in found]  # type: ignore[misc]
            out.append("; ".join(shown) or "none")
        else:
            out.append(p)
    return "".join(out)


def _ids(slo: SLO) -> str:
    return q.matchers([(cv.L_CLASS, q.eq(slo.request_class)), (cv.L_SLO, q.eq(slo.name))])


def _burn(slo: SLO, window: str) -> Number:
    ratio = f"{win.ratio(_ids(slo), window)} / {q.num(slo.budget, 12)}"
    return Number(("burn", window), ratio, unit="x")


def burn_rates(slo: SLO, severity: str) -> list[Part]:
    parts: list[Part] = []
    for i, b in enumerate(r for r in cv.BURN_ALERTS if r.severity == severity):
        if i:
            parts.append("; ")
        parts += [f"{b.long_window} ", _burn(slo, b.long_window), f", {b.short_window} ",
                  _burn(slo, b.short_window), f" (over {q.num(burn.factor(slo, b))}x)"]  # fmt: skip
    return parts


def budget_left(slo: SLO) -> list[Part]:
    left = Number(("budget",), f"100 * {cv.SLO_BUDGET_REMAINING_RECORD}{_ids(slo)}", unit="%")
    return [left, f" of the {slo.period_window} error budget left"]


def exhaustion(slo: SLO, exhaustion_expr: str) -> list[Part]:
    window = cv.EXHAUSTION_WINDOWS[0]
    one_line = " ".join(exhaustion_expr.split())
    hours = Number(("exhaustion", window), f"({one_line}) / 3600", unit=" h")
    return [f"at the last {window}'s burn the rest of the budget lasts ", hours]


def endpoints_query(slo: SLO, window: str) -> str:
    """Per endpoint: bad events over ``window`` (all so far while the records are younger)."""
    now = f"sum by ({cv.L_ENDPOINT}) ({cv.slo_cumulative_events_record('bad')}{_ids(slo)})"
    then = f"sum by ({cv.L_ENDPOINT}) ({cv.slo_cumulative_events_record('bad')}{_ids(slo)} offset {window})"
    return f"topk({TOP_ENDPOINTS}, {now} - ({then} or 0 * {now}) > 0)"


def endpoints(slo: SLO, severity: str) -> list[Part]:
    window = next(b.long_window for b in cv.BURN_ALERTS if b.severity == severity)
    return [
        f"bad events over the last {window}: ",
        Endpoints(("endpoints", window), endpoints_query(slo, window)),
    ]


def dashboard(model: Model, slo: SLO) -> str:
    return f"{model.alerting.grafana_url}/d/{SLO_DASHBOARD_UID}?var-class={slo.request_class}"


def burn_annotations(model: Model, slo: SLO, severity: str, exhaustion_expr: str) -> dict[str, list[Part]]:
    """The extra annotations of ``slo``'s burn alert of ``severity``, as parts."""
    return {
        "burn_rates": burn_rates(slo, severity),
        "budget_left": budget_left(slo),
        "exhaustion": exhaustion(slo, exhaustion_expr),
        "endpoints": endpoints(slo, severity),
        "dashboard": [dashboard(model, slo)],
        "requests": requests(model, slo),
    }


def requests_query(model: Model, slo: SLO) -> str:
    """The bad requests the monitor publishes for ``slo``, worst (rank 1) first."""
    sel = q.monitor_selector(model.alerting, **{cv.L_CLASS: slo.request_class, cv.L_SLO: slo.name})
    return f"sort({cv.SLO_REQUEST_INFO}{sel})"


def requests(model: Model, slo: SLO) -> list[Part]:
    return [Requests(("requests",), requests_query(model, slo))]
