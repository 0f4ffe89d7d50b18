"""The report's charts: PNG bytes drawn with matplotlib's Agg canvas, byte-for-byte reproducible.

Figures are built with :class:`matplotlib.figure.Figure` (no pyplot global state), fixed sizes,
fonts and colours, and saved without a timestamp or software tag, so the same
:class:`~monitor.report.data.ReportData` always gives the same bytes. Labels that come from the
configuration or the store are drawn as plain text (mathtext ``$`` is escaped).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from datetime import timedelta

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from monitor.report.data import BREAKDOWN_PARTS, LATENCY_KINDS, Breakdown, LatencyStats, Period, SLOSeries

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
PART_LABELS = {
    "queue": "queue",
    "prefill": "prefill",
    "decode": "decode",
    "network": "network",
    "tool_turnaround": "tool turnaround",
}
KIND_LABELS = {"ttft": "TTFT", "itl": "ITL (mean per probe)", "e2e": "end-to-end"}
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
    """Room for the longest class name on the y axis, as a share of a 9-inch figure."""
    return min(0.4, 0.03 + 0.0075 * max((len(x) for x in labels), default=4))


def burn_down(series: Sequence[SLOSeries], week: Period) -> bytes | None:
    """Attainment (cumulative over the week) and error budget left, one line per SLO of a class."""
    if not any(p.attainment is not None for s in series for p in s.points):
        return None
    fig = Figure(figsize=(9.0, 2.6))
    fig.subplots_adjust(left=0.07, right=0.99, top=0.88, bottom=0.14, wspace=0.22)
    att, bud = fig.subplots(1, 2)
    start = week.start
    days = math.ceil(week.seconds / 86400)
    ticks = [(start + timedelta(days=d)).strftime("%a %d") for d in range(days + 1)] if days <= 14 else []
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        xs = [(p.at - start).total_seconds() / 86400 for p in s.points]
        att.plot(xs, [_nan(p.attainment, 100) for p in s.points], color=colour, label=plain(s.slo))
        att.axhline(s.objective * 100, color=colour, linestyle=":", linewidth=0.8)
        bud.plot(xs, [_nan(p.budget_remaining, 100) for p in s.points], color=colour, label=plain(s.slo))
    att.set_title("Attainment this week so far (%)", loc="left")
    bud.set_title("Error budget left in the SLO period (%)", loc="left")
    bud.axhline(25, color="#d62728", linestyle="--", linewidth=0.8)
    bud.axhline(0, color="black", linewidth=0.6)
    for ax in (att, bud):
        ax.grid(True, alpha=0.3)
        if ticks:
            ax.set_xticks(range(len(ticks)), ticks, fontsize=7)
    bud.legend(loc="lower left", fontsize=7, ncols=2)
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
        for j, (name, attr) in enumerate((("P50", "p50"), ("P95", "p95"), ("P99", "p99"))):
            ys = [i + (j - 1) * width for i in range(len(classes))]
            vals = [_nan(getattr(by_key.get((c, kind)), attr, None)) for c in classes]
            ax.barh(ys, vals, height=width, color=PALETTE[j], label=name)
        ax.set_title(f"{KIND_LABELS[kind]} (s)")
        _log_seconds_axis(ax)
    axes[0].invert_yaxis()
    axes[0].set_yticks(range(len(classes)), [plain(c) for c in classes])
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
    ax.set_yticks(range(len(rows)), [plain(r.request_class) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("mean seconds per probe request")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=7, ncols=5, frameon=False)
    return _png(fig)
