"""The operating contract as Markdown (CLI, weekly report's Markdown) and HTML (the report page)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from monitor.contract.build import PATH_FIELDS, Capacity, ClassContract
from monitor.contract.table import COLUMNS, RunFigures


def _tokens(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def capacity_text(c: Capacity) -> str:
    if c.load_kind is None:
        return f"not established ({c.runs} replay run(s) judged; run `m3mon replay` at rising loads)"
    unit = " req/s" if c.load_kind == "rate" else " in flight"
    held = "no tested load" if c.holds_at is None else f"{c.holds_at:g}{unit}"
    fails = "" if c.fails_at is None else f"; an SLO failed at {c.fails_at:g}{unit}"
    return f"SLOs hold up to {held} ({c.load_kind}, {c.runs} run(s){fails})"


def warm_capacity_text(cc: ClassContract) -> str:
    """The capacity bracket, or why there is none on the current deployment."""
    return f"not established: {cc.stale}" if cc.stale else capacity_text(cc.capacity)


def ceiling_text(cc: ClassContract) -> str:
    u = cc.ceiling
    pool = "unknown" if u.max_model_len is None else f"{u.max_model_len:,}"
    cover = "-" if u.coverage is None else f"{'at least ' if u.coverage_is_bound else ''}{u.coverage:.2%}"
    return (
        f"{u.ceiling:,} tokens (pool max-model-len {pool}); covers {cover} of observed requests; "
        f"prompt+output P50 {_tokens(u.p50)}, P95 {_tokens(u.p95)}, P99 {_tokens(u.p99)}, "
        f"max {_tokens(u.largest)} over {u.samples} samples from {u.source}"
    )


def path_text(cc: ClassContract) -> list[str]:
    out = []
    for key, label in PATH_FIELDS:
        value = cc.path.get(key)
        out.append(f"{label}: {'not recorded' if value is None else value}")
    return out


def markdown(contracts: Sequence[ClassContract], heading: str = "#") -> str:
    lines = [f"{heading} Operating contract", ""]
    if not contracts:
        return "\n".join([*lines, "No request class has an endpoint."])
    for cc in contracts:
        lines += [f"{heading}# {cc.name} (on {cc.endpoint})", ""]
        lines.append(f"* **Context ceiling**: {ceiling_text(cc)}")
        lines += [f"  * advice: {a}" for a in cc.ceiling.advice]
        lines.append(f"* **Warm capacity**: {warm_capacity_text(cc)}")
        lines.append(f"* **Precision and kernel path**: {'; '.join(path_text(cc))}")
        fp = (cc.fingerprint_digest or "none")[:12]
        lines.append(f"* **Percentiles to hold** (deployment fingerprint {fp}):")
        lines += [f"  * {o}" for o in cc.objectives]
        lines += [f"* note: {n}" for n in cc.notes]
        lines += [f"* **Runs**: {runs_caption(cc)}", *_markdown_table(cc), ""]
    return "\n".join(lines).rstrip() + "\n"


#: The per-run table's columns (monitor.contract.table.RunFigures), percentiles in milliseconds.
RUN_HEAD = ("run", "source", "load", "ok/sent", "req/s", *(f"{m.upper() if m != 'e2e' else m} P{p}"
            for m, p in COLUMNS), "basis", "counted")  # fmt: skip


def runs_caption(cc: ClassContract) -> str:
    if not cc.runs:
        return "none stored (`m3mon replay`, or a peer result with `m3mon contract --import`)"
    shown = (
        f"the newest {len(cc.runs)} of {cc.runs_total}"
        if cc.runs_total > len(cc.runs)
        else "every stored run"
    )
    return f"{shown}, oldest first; percentiles in ms as stored"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.1f}"


def run_cells(r: RunFigures) -> tuple[str, ...]:
    """One row of the per-run table, as text (``RUN_HEAD``'s order)."""
    rate = "-" if r.request_throughput is None else f"{r.request_throughput:.2f}"
    figures = (_ms(r.percentiles.get(f"{m}_p{p}")) for m, p in COLUMNS)
    return (
        str(r.run_id),
        r.source,
        r.load,
        f"{r.succeeded}/{r.requests}",
        rate,
        *figures,
        r.basis,
        r.counted,
    )


def _markdown_table(cc: ClassContract) -> list[str]:
    if not cc.runs:
        return []
    rows = [RUN_HEAD, tuple("---" for _ in RUN_HEAD), *(run_cells(r) for r in cc.runs)]
    return ["", *("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows)]


def _html_table(cc: ClassContract) -> str:
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in RUN_HEAD)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in run_cells(r)) + "</tr>" for r in cc.runs)
    table = f"<table><tr>{head}</tr>{body}</table>" if cc.runs else ""
    return f"<dt>Runs</dt><dd>{e(runs_caption(cc))}{table}</dd>"


def html_section(contracts: Sequence[ClassContract]) -> str:
    """An HTML fragment (every value escaped) for the weekly report and ``m3mon contract --html``."""
    e = html.escape
    parts = ['<section class="contract"><h2>Operating contract</h2>']
    for cc in contracts:
        advice = "".join(f"<li>{e(a)}</li>" for a in cc.ceiling.advice)
        objectives = "".join(f"<li>{e(o)}</li>" for o in cc.objectives)
        parts.append(
            f"<h3>{e(cc.name)} <small>on {e(cc.endpoint)}</small></h3><dl>"
            f"<dt>Context ceiling</dt><dd>{e(ceiling_text(cc))}{f'<ul>{advice}</ul>' if advice else ''}</dd>"
            f"<dt>Warm capacity</dt><dd>{e(warm_capacity_text(cc))}</dd>"
            f"<dt>Precision and kernel path</dt><dd>{e('; '.join(path_text(cc)))}</dd>"
            f"<dt>Percentiles to hold</dt><dd><ul>{objectives}</ul></dd>"
            f"{_html_table(cc)}</dl>"
        )
    parts.append("</section>")
    return "".join(parts)
