"""The report's "Where the tail goes" section: the stage shares of :mod:`monitor.bottleneck.tail`
rendered as sentences, a table and JSON (computed once there, rendered here)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from monitor.bottleneck.rules import Verdict
from monitor.bottleneck.tail import MIN_BAND, OTHER, TailShare
from monitor.bottleneck.tenants import MIN_TENANT_REQUESTS
from monitor.report import display
from monitor.slo import numbers

LABELS = {"retry": "retries", "network": "network", "tokenization": "tokenization", "queue": "queue",
          "prefill": "prefill", "decode": "decode", "tool_turnaround": "tool turnaround",
          OTHER: "other"}  # fmt: skip
COLUMNS = ("retry", "network", "tokenization", "queue", "prefill", "decode", "tool_turnaround", OTHER)
NAMES = {"ttft": "TTFT", "e2e": "e2e"}
BAND_LABELS = {"p95": "P95+", "p99": "P99+", "p50": "≤ P50"}
#: What the per-tenant lines are (report/tenant_tail.py), in every format.
TENANT_HEADING = (
    f"Per tenant (real traffic, tenants with {MIN_TENANT_REQUESTS} requests or more): where a tenant's "
    "P95+ band has another owning stage than its class's. The verdict's pool evidence (GPUs, queue, "
    "cache) is shared by every tenant; only the stage ownership is per tenant."
)


def sentence(tail: TailShare, typical: TailShare | None) -> str:
    """``P95+ TTFT of chat (12 requests from 2.10 s): 71% queue; at P50 and below: 80% prefill``;
    a P99+ band: ``P99+ TTFT of chat (2 requests from 4.00 s): 90% queue``, or ``P99+ TTFT of chat:
    not enough requests (40 probe request(s) …; 100 needed)``."""
    head = f"{BAND_LABELS[tail.band]} {NAMES[tail.metric]} of {tail.request_class}"
    if tail.why_none is not None:
        said = "not enough requests" if tail.band == "p99" else "not attributed"
        return f"{head}: {said} ({tail.why_none})"
    share = dict(tail.shares)[tail.dominant or OTHER]
    text = (
        f"{head} ({tail.requests} requests from {display.seconds(tail.bound)}): "
        f"{numbers.share(share)} {LABELS[tail.dominant or OTHER]}"
    )
    if typical is not None and typical.dominant is not None:
        low = dict(typical.shares)[typical.dominant]
        text += f"; at P50 and below: {numbers.share(low)} {LABELS[typical.dominant]}"
    return text


def pairs(shares: Sequence[TailShare]) -> list[tuple[TailShare, TailShare | None]]:
    """Each P95+ tail with the typical band of the same class and latency, then its P99+ band alone."""
    typical = {(s.request_class, s.metric): s for s in shares if s.band == "p50"}
    far = {(s.request_class, s.metric): s for s in shares if s.band == "p99"}
    out: list[tuple[TailShare, TailShare | None]] = []
    for s in shares:
        if s.band == "p95":
            out.append((s, typical.get((s.request_class, s.metric))))
            if (p99 := far.get((s.request_class, s.metric))) is not None:
                out.append((p99, None))
    return out


def cells(s: TailShare) -> list[str]:
    """The table cells of one band: a share per column, "—" for a stage the latency has not."""
    got = dict(s.shares)
    return [numbers.share(got[c]) if c in got else "—" for c in COLUMNS]


def markdown(
    shares: Sequence[TailShare],
    escape: Callable[[str], str],
    table: Callable[..., list[str]],
    verdicts: Sequence[Verdict] = (),
    traffic: Sequence[TailShare] = (),
    tenants: Sequence[str] = (),
) -> list[str]:
    """The section as Markdown lines (``escape`` and ``table`` are the Markdown renderer's)."""
    r = rendered(shares, verdicts, traffic, tenants)
    if r is None:
        return []
    out = ["## Where the tail goes", "", *(f"- {escape(line)}" for line in r.sentences)]
    if r.verdicts:
        out += ["", "Bottleneck verdict this period (docs/bottleneck.md):", "",
                *(f"- {escape(line)}" for line in r.verdicts)]  # fmt: skip
    if r.tenants:
        out += ["", escape(TENANT_HEADING), "", *(f"- {escape(line)}" for line in r.tenants)]
    head = ["class", "latency", "band", "requests", *r.head]
    rows = [[escape(row[0]), *row[1:]] for row in r.rows]
    return [*out, "", *(table(head, rows, range(3, 4 + len(COLUMNS))) if rows else []), ""]


@dataclass(frozen=True)
class Rendered:
    """The section's text, computed once for the HTML page (the Markdown uses the same helpers)."""

    sentences: tuple[str, ...]
    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    verdicts: tuple[str, ...] = ()  # ``class: verdict title: evidence`` per class
    tenants: tuple[str, ...] = ()  # per tenant, where its tail's owner differs (report/tenant_tail.py)


def verdict_line(v: Verdict) -> str:
    """``interactive-32k: GPU-bound: P95+ TTFT 71% queue, e2e 60% decode; SM active 98%``."""
    return f"{v.request_class}: {v.reason}"


#: How real traffic's lines and table rows are told from the probes'.
TRAFFIC_LABEL = "real traffic"


def _rows(shares: Sequence[TailShare], suffix: str = "") -> tuple[tuple[str, ...], ...]:
    return tuple(
        (s.request_class + suffix, NAMES[s.metric], BAND_LABELS[s.band], str(s.requests), *cells(s))
        for s in shares
        if s.why_none is None
    )


def rendered(
    shares: Sequence[TailShare],
    verdicts: Sequence[Verdict] = (),
    traffic: Sequence[TailShare] = (),
    tenants: Sequence[str] = (),
) -> Rendered | None:
    """The section's text; ``traffic``: real traffic's shares (:mod:`monitor.report.collect_traffic`);
    ``tenants``: the per-tenant lines (:func:`monitor.report.tenant_tail.lines`)."""
    if not shares and not traffic:
        return None
    rows = _rows(shares) + _rows(traffic, f" ({TRAFFIC_LABEL})")
    lines = [sentence(t, p) for t, p in pairs(shares)]
    lines += [f"{TRAFFIC_LABEL.capitalize()}: {sentence(t, p)}" for t, p in pairs(traffic)]
    return Rendered(
        tuple(lines),
        tuple(LABELS[c] for c in COLUMNS),
        rows,
        tuple(verdict_line(v) for v in verdicts),
        tuple(tenants),
    )


def to_json(shares: Sequence[TailShare]) -> list[dict[str, object]]:
    return [
        {
            "class": s.request_class,
            "latency": s.metric,
            "band": s.band,
            "requests": s.requests,
            "bound_seconds": s.bound,
            "shares": dict(s.shares),
            "dominant": s.dominant,
            "why_none": s.why_none,
            "min_requests": MIN_BAND[s.band],
        }
        for s in shares
    ]
