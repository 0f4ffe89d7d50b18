"""The report's charts: PNG bytes drawn with matplotlib's Agg canvas, byte-for-byte reproducible.

Figures are built with :class:`matplotlib.figure.Figure` (no pyplot global state), fixed sizes,
fonts and colours, and saved without a timestamp or software tag, so the same
:class:`~monitor.report.data.ReportData` always gives the same bytes. Labels that come from the
configuration or the store are drawn as plain text (mathtext ``$`` is escaped).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, tzinfo

import matplotlib.dates as mdates
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from monitor.report.data import AT_RISK_BUDGET, SeriesPoint, SLOSeries
from monitor.report.latency_data import (
    BREAKDOWN_PARTS,
    LATENCY_KINDS,
    Breakdown,
    BreakdownSeries,
    LatencyStats,
)

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
PART_LABELS = {
    "queue": "queue",
    "prefill": "prefill",
    "decode": "decode",
    "network": "network",
    "tool_turnaround": "tool turnaround",
    "tokenization": "tokenization",
    "retry": "retries",
}
KIND_LABELS = {"ttft": "TTFT", "itl": "ITL (per token, pooled)", "e2e": "end-to-end"}
DPI = 100
RC = {"font.family": "DejaVu Sans", "font.size": 9, "axes.titlesize": 10, "svg.hashsalt": "m3mon"}


def plain(text: str) -> str:
    """A label drawn literally: matplotlib would otherwise read ``$...$`` as mathtext."""
    return text.replace("\\", "\\\\").replace("$", r"\$")


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _nan(value: float | None, scale: float = 1.0) -> float:
    return math.nan if value is None else value * scale


def _left_margin(labels: Sequence[str]) -> float:
    """A first guess of the room for the longest y label, as a share of a 9-inch figure
    (:func:`_fit_left` measures the labels drawn and widens it)."""
    return min(0.4, 0.03 + 0.0075 * max((len(x) for x in labels), default=4))


def _fit_left(fig: Figure, ax: Axes) -> None:
    """Widen the left margin until every y tick label of ``ax`` lies inside the figure, measured
    with the renderer (a label is never cut at the image's edge)."""
    renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]
    x0 = min((t.get_window_extent(renderer).x0 for t in ax.get_yticklabels() if t.get_text()), default=0.0)
    pad = 6.0 * fig.dpi / 72
    if x0 < pad:
        left = fig.subplotpars.left + (pad - x0) / (fig.dpi * fig.get_figwidth())
        fig.subplots_adjust(left=min(0.6, left))


def _time_axis(ax: Axes, xs: Sequence[datetime], tz: tzinfo | None) -> None:
    """A time axis fitted to ``xs`` (the data, not the whole period), labelled in the report's zone."""
    locator = mdates.AutoDateLocator(tz=tz, minticks=4, maxticks=9)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=tz))  # type: ignore[no-untyped-call]
    lo, hi = min(xs), max(xs)
    pad = max((hi - lo) * 0.01, timedelta(seconds=30))
    ax.set_xlim(lo - pad, hi + pad)  # type: ignore[arg-type]
    ax.tick_params(axis="x", labelsize=7)


def _span(values: Sequence[float], also: Sequence[float], top: float) -> tuple[float, float]:
    """y limits holding the finite ``values`` and the reference lines ``also``, up to ``top``."""
    seen = [v for v in (*values, *also) if math.isfinite(v)]
    lo, hi = min(seen, default=0.0), max([top, *seen])
    pad = max((hi - lo) * 0.08, 0.05)
    return lo - pad, hi + pad


def _label(ax: Axes, y: float, text: str, colour: str, below: bool = False) -> None:
    """A reference line's name, at the right end of the line (above it, or below)."""
    ax.annotate(plain(text), xy=(0.995, y), xycoords=("axes fraction", "data"), ha="right",
                va="top" if below else "bottom", fontsize=6.5, color=colour)  # fmt: skip


def _gapped(points: Sequence[SeriesPoint], value: str) -> list[float]:
    """Percentages of ``value`` per point; NaN (a gap in the line) where the step had no events."""
    return [_nan(getattr(p, value), 100) if p.events > 0 else math.nan for p in points]


#: Drawing order of the burn-down charts: the SLOs' lines over everything else, so a line running
#: along a reference line or through its name ("at risk below 25% left", "exhausted") is never cut
#: by it (matplotlib draws text at 3 and lines at 2); the reference lines under the series.
SERIES_Z = 4.0
REFERENCE_Z = 1.5

#: The budget panel's lowest line (unless a line ends lower): a dip below it runs along the floor
#: and its lowest value is written, so the 25 % and 0 % lines stay readable. It is drawn at the
#: floor, not left out: a break in a line means a step without events.
BUDGET_FLOOR = -150.0


def _budget_floor(last: Sequence[float]) -> float:
    """Down to BUDGET_FLOOR, or lower to keep the lines' ends (``last``) on the chart."""
    return min([BUDGET_FLOOR, *(1.2 * v for v in last if math.isfinite(v))])


def _budget_axis(ax: Axes, values: Sequence[float], floor: float) -> None:
    """The budget panel's y axis down to ``floor``; ``values`` are the lines' unclamped values."""
    kept = [max(v, floor) for v in values if math.isfinite(v)]
    ax.set_ylim(*_span(kept, [0.0, AT_RISK_BUDGET * 100], 100.0))
    low = min((v for v in values if math.isfinite(v)), default=0.0)
    if low < floor:
        ax.annotate(f"lowest {low:,.0f}% (off the scale)", xy=(0.01, 0.02), xycoords="axes fraction",
                    fontsize=6.5, color="#555555")  # fmt: skip
    ax.axhline(AT_RISK_BUDGET * 100, color="#d62728", linestyle="--", linewidth=0.9, zorder=REFERENCE_Z)
    _label(ax, AT_RISK_BUDGET * 100, f"at risk below {AT_RISK_BUDGET:.0%} left", "#d62728")
    ax.axhline(0, color="black", linewidth=0.7, zorder=REFERENCE_Z)
    _label(ax, 0.0, "exhausted", "black", below=True)


def burn_down(series: Sequence[SLOSeries], tz: tzinfo | None = None) -> bytes | None:
    """Attainment (cumulative over the period) and error budget left, one line per SLO of a class."""
    if not any(p.attainment is not None and p.events > 0 for s in series for p in s.points):
        return None
    fig = Figure(figsize=(9.0, 3.0))
    fig.subplots_adjust(left=0.07, right=0.96, top=0.9, bottom=0.3, wspace=0.2)
    att, bud = fig.subplots(1, 2)
    xs_all: list[datetime] = []
    ys_att: list[float] = []
    ys_bud: list[float] = []
    ends = [next((v for v in reversed(_gapped(s.points, "budget_remaining")) if math.isfinite(v)), math.nan)
            for s in series]  # fmt: skip
    floor = _budget_floor(ends)
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        xs = [p.at for p in s.points]
        a, b = _gapped(s.points, "attainment"), _gapped(s.points, "budget_remaining")
        label = plain(f"{s.slo} (objective {round(s.objective * 100, 6):g}%, dotted)")
        att.plot(xs, a, color=colour, marker="o", markersize=2.2, linewidth=1.3, label=label, zorder=SERIES_Z)
        bud.plot(xs, [max(v, floor) for v in b], color=colour, marker="o", markersize=2.2, linewidth=1.3,
                 zorder=SERIES_Z)  # fmt: skip
        att.axhline(s.objective * 100, color=colour, linestyle=":", linewidth=0.9, zorder=REFERENCE_Z)
        xs_all += xs
        ys_att += a
        ys_bud += b
    att.set_ylim(*_span(ys_att, [s.objective * 100 for s in series], 100.0))
    _budget_axis(bud, ys_bud, floor)
    att.set_title("Attainment this period so far (%)", loc="left")
    bud.set_title("Error budget left in the SLO period (%)", loc="left")
    for ax in (att, bud):
        ax.grid(True, alpha=0.3)
        ax.tick_params(axis="y", labelsize=7)
        _time_axis(ax, xs_all, tz)
    handles, labels = att.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncols=min(3, len(labels)), fontsize=7, frameon=False)
    return _png(fig)


def breakdown_over_time(
    series: Sequence[BreakdownSeries], tz: tzinfo | None = None, populations: Mapping[str, str] | None = None
) -> bytes | None:
    """Per class, the stacked mean seconds per request of each part over the period."""
    rows = [s for s in series if any(p.count or any(v is not None for _, v in p.parts) for p in s.points)]
    if not rows:
        return None
    fig = Figure(figsize=(9.0, 0.7 + 1.45 * len(rows)))
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.07, right=0.96, top=1 - 0.45 / height, bottom=0.35 / height, hspace=0.55)
    axes = fig.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
    for ax, s in zip(axes, rows, strict=True):
        xs = [p.at for p in s.points]
        empty = [all(v is None for _, v in p.parts) for p in s.points]
        lower = [0.0] * len(xs)
        for j, part in enumerate(BREAKDOWN_PARTS):
            vals = [p.part(part) or 0.0 for p in s.points]
            upper = [a + b for a, b in zip(lower, vals, strict=True)]
            lo = [math.nan if e else v for v, e in zip(lower, empty, strict=True)]
            hi = [math.nan if e else v for v, e in zip(upper, empty, strict=True)]
            ax.fill_between(xs, lo, hi, step="pre", color=PALETTE[j], linewidth=0, label=PART_LABELS[part])
            lower = upper
        whose = (populations or {}).get(s.request_class, "probe requests")
        per = "per probe request" if whose == "probe requests" else f"per request — {whose}"
        ax.set_title(f"{plain(s.request_class)}: mean seconds {plain(per)}", loc="left", fontsize=8.5)
        ax.grid(True, alpha=0.3)
        ax.tick_params(axis="y", labelsize=7)
        _time_axis(ax, xs, tz)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", ncols=5, fontsize=7, frameon=False)
    return _png(fig)


def latency(stats: Sequence[LatencyStats]) -> bytes | None:
    """P50/P95/P99 of TTFT, ITL and end-to-end latency per class (grouped bars, log scale)."""
    if not any(s.p50 is not None for s in stats):
        return None
    classes = list(dict.fromkeys(s.request_class for s in stats))
    by_key = {(s.request_class, s.kind): s for s in stats}
    height = 1.3 + 0.35 * max(3, len(classes))
    fig = Figure(figsize=(9.0, height))
    fig.subplots_adjust(left=_left_margin(classes), right=0.99, top=1 - 0.3 / height, bottom=0.55 / height,
                        wspace=0.08)  # fmt: skip
    axes = fig.subplots(1, len(LATENCY_KINDS), sharey=True)
    width = 0.27
    for ax, kind in zip(axes, LATENCY_KINDS, strict=True):
        longest = 0.0
        for j, (name, attr) in enumerate((("P50", "p50"), ("P95", "p95"), ("P99", "p99"))):
            ys = [i + (j - 1) * width for i in range(len(classes))]
            vals = [_nan(getattr(by_key.get((c, kind)), attr, None)) for c in classes]
            ax.barh(ys, vals, height=width, color=PALETTE[j], label=name)
            longest = max([longest, *(v for v in vals if v == v and v > 0)])
        ax.set_title(f"{KIND_LABELS[kind]} (s)")
        _log_seconds_axis(ax)
        if longest > 0:
            ax.set_xlim(right=longest * 1.6)  # the longest bar ends inside the frame, never on it
    axes[0].invert_yaxis()
    axes[0].set_yticks(range(len(classes)), [plain(c) for c in classes])
    _fit_left(fig, axes[0])
    handles, labels = axes[0].get_legend_handles_labels()  # below the axes: never over a bar
    fig.legend(handles, labels, loc="lower right", ncols=3, fontsize=7, frameon=False)
    return _png(fig)


def _log_seconds_axis(ax: Axes) -> None:
    """A log x axis labelled in plain seconds at 1-2-5 steps (no crowded ``2×10⁻¹`` minor labels)."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(True, axis="x", alpha=0.3)


def breakdown(rows: Sequence[Breakdown]) -> bytes | None:
    """Mean seconds per request in queue / prefill / decode / network / tool turnaround (stacked)."""
    rows = [r for r in rows if any(v is not None for _, v in r.parts)]
    if not rows:
        return None
    fig = Figure(figsize=(9.0, 1.2 + 0.32 * max(3, len(rows))))
    fig.subplots_adjust(left=_left_margin([r.request_class for r in rows]), right=0.99, top=0.8, bottom=0.15)
    ax = fig.subplots()
    left = [0.0] * len(rows)
    for j, part in enumerate(BREAKDOWN_PARTS):
        vals = [r.part(part) or 0.0 for r in rows]
        ax.barh(range(len(rows)), vals, left=left, color=PALETTE[j], label=PART_LABELS[part])
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_yticks(
        range(len(rows)),
        [plain(r.request_class + ("" if r.population == "probe requests" else " (pool)")) for r in rows],
    )
    ax.invert_yaxis()
    _fit_left(fig, ax)
    ax.set_xlabel("mean seconds per request (probe requests; (pool): all of the pool's requests)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=7, ncols=5, frameon=False)
    return _png(fig)
