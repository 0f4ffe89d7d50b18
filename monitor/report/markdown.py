"""``report.md``: the report as GitHub-flavoured Markdown for chat and wikis.

Every value that comes from the configuration or the store passes through :func:`escape`, which
escapes the Markdown punctuation that can start markup where it stands (so ``[x](javascript:...)``
stays text and ``<script>`` is not HTML) and folds newlines, so a label can neither break a table
nor start a block; and nothing more, since Slack shows a backslash escape as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from monitor.report import budget, charts, display, maintenance
from monitor.report import contract as report_contract
from monitor.report import goodput as report_goodput
from monitor.report import tail as report_tail
from monitor.report import tenants as report_tenants
from monitor.report.data import SOURCE_DERIVED, ReportData
from monitor.report.latency_data import BREAKDOWN_PARTS
from monitor.report.tenant_tail import lines as tenant_lines

#: Characters that can open or close inline markup, a link or a table cell wherever they stand.
_ALWAYS = re.compile(r"([\\`*\[\]|~])")
#: ``_`` opens or closes emphasis only at a word's edge (``vllm_version`` is plain text in CommonMark,
#: GFM and Slack alike).
_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
#: Raw HTML and entities: written as entities, which GFM and Slack both show as the character.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape(text: object) -> str:
    """``text`` as literal Markdown, with as few escapes as that takes, since Slack shows a
    backslash escape literally: ``\\ ` * [ ] | ~`` and ``_`` at a word's edge are backslash-escaped
    (no link, code span, emphasis or table cell can start), ``& < >`` become entities, a ``#``
    that would start a heading is escaped, and line breaks fold to spaces. Parentheses, braces,
    ``!`` and ``_`` inside a word stay as they are: without ``[`` none of them is markup."""
    flat = " ".join(str(text).split())
    flat = "".join(_ENTITIES.get(c, c) for c in flat)
    flat = _ALWAYS.sub(r"\\\1", flat)
    flat = _EDGE_UNDERSCORE.sub(r"\\_", flat)
    return "\\" + flat if flat.startswith("#") else flat


def table(header: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    """A GFM table; cells must already be escaped (``|`` inside a cell is escaped by :func:`escape`)."""
    align = ["---:" if i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines.extend("| " + " | ".join(r) + " |" for r in rows)
    return [*lines, ""]


def _headline(d: ReportData) -> list[str]:
    icon = display.STATUS_ICON[d.status]
    if d.attention:
        out = [f"**{icon} {len(d.attention)} of {len(d.classes)} request classes need attention**", ""]
        for c in d.attention:
            bits = [
                f"{escape(s.slo)} {display.attainment(s.attainment)} vs {display.objective(s.objective)}, "
                f"budget left {display.budget(s.budget_remaining)}, "
                f"{display.status(s.status)}: {escape(display.reason(s))}"
                for s in c.slos
                if s.status in ("missed", "at_risk")
            ]
            scoped = report_tenants.scoped_summary(c)
            bits += [escape(scoped)] if scoped else []
            out.append(f"- **{escape(c.name)}** ({display.status(c.status)}): " + "; ".join(bits))
        return [*out, ""]
    if d.status == "no_data":
        return [f"**{icon} No SLO data this week: nothing was measured.**", ""]
    return [f"**{icon} All request classes met their SLOs this week.**", ""]


def _slos(d: ReportData) -> list[str]:
    head = [
        "class",
        "SLO",
        "objective",
        "this week",
        escape(display.previous_label(d.previous_week)),
        "good / total",
        "budget left",
        "burn (week)",
        "burn (last day)",
        "status",
    ]
    rows = [
        [
            escape(c.name),
            escape(s.slo),
            f"{display.objective(s.objective)} / {s.period_window}",
            display.attainment(s.attainment),
            display.attainment(s.attainment_previous),
            f"{display.count(s.good)} / {display.count(s.total)}",
            display.budget(s.budget_remaining)
            + (
                ""
                if s.budget_remaining_previous is None
                else f" (last week {display.budget(s.budget_remaining_previous)})"
            ),
            display.burn(s.burn_rate),
            display.burn(s.burn_rate_recent),
            display.status(s.status),
        ]
        for c in d.classes
        for s in c.slos
    ]
    return ["## SLOs by request class", "", *table(head, rows, right=range(2, 9))]


def _reader(d: ReportData) -> list[str]:
    lines = []
    for r in d.reader:
        lines.append(f"- {escape(display.reader_line(r))}")
        paid = display.costly_line(r)
        if paid is not None:
            lines.append(f"  - {escape(paid)}")
    hours = d.deployment_window_hours
    changed = " ".join(escape(display.deployment_line(dep, hours)) for dep in d.deployments)
    deployed = f"**Deployment:** {changed or 'no deployment changed this week.'}"
    return ["## In short", "", *lines, "", deployed, ""] if lines else []


#: Where page one ends (every format): the rest of the report is the detail behind it.
APPENDIX = [
    "## Appendix for SREs",
    "",
    "The detail behind the summary above, in its order: every SLO, the tenants (when SLOs are declared per "
    "tenant), the error budget, maintenance, every incident, probe failures, deployment changes, then "
    "capacity, latency and the operating contract.",
    "",
]


def _incidents(d: ReportData) -> list[str]:
    if not d.incidents:
        none = "No alert fired, no burn-rate condition held and no error budget was exhausted this week."
        return ["## Incidents", "", none, ""]
    rows = []
    for i in d.incidents:
        where = escape(i.request_class or "—") + (f" / {escape(i.slo)}" if i.slo else "")
        costs = (
            "; ".join(
                f"{escape(c.slo_id)}: {display.budget(c.share)} ({display.count(c.bad)} / "
                f"{display.count(c.allowed)})"
                for c in i.costs
            )
            or "no SLO events"
        )
        rows.append(
            [
                escape(i.alertname),
                escape(i.severity),
                where,
                display.when(i.started_at),
                display.when(i.ended_at),
                display.duration(i.duration_seconds),
                display.burn(i.peak_burn) if i.peak_burn is not None else "—",
                costs,
                "derived" if i.source == SOURCE_DERIVED else "Alertmanager",
                escape(i.summary),
            ]
        )
    head = ["alert", "severity", "class / SLO", "started", "ended", "duration", "peak burn (1h)",
            "budget cost", "source", "summary"]  # fmt: skip
    return ["## Incidents", "", *table(head, rows, right=(5, 6))]


def _failures(d: ReportData) -> list[str]:
    if not d.probe_failures:
        return ["## Probe failures by category", "", "No probe failed this week.", ""]
    rows = [
        [escape(f.request_class), escape(f.category), display.count(f.count), escape(f.example)]
        for f in d.probe_failures
    ]
    return [
        "## Probe failures by category",
        "",
        *table(["class", "category", "failures", "latest detail"], rows, (2,)),
    ]


def _deployments(d: ReportData) -> list[str]:
    if not d.deployments:
        return ["## Deployment changes", "", "No deployment changed this week.", ""]
    out = ["## Deployment changes", ""]
    hours = d.deployment_window_hours
    for dep in d.deployments:
        out += [f"### {escape(dep.endpoint)} — {display.when(dep.at)}", ""]
        out += table(
            ["setting", "before", "after"], [[escape(f), escape(b), escape(a)] for f, b, a in dep.changes]
        )
        rows = [
            [escape(s.slo_id), display.attainment(s.before), display.attainment(s.after)] for s in dep.slos
        ]
        if rows:
            out += table(["SLO", f"attainment {hours}h before", f"attainment {hours}h after"], rows, (1, 2))
    return out


def _capacity(d: ReportData) -> list[str]:
    if not d.capacity:
        return ["## Capacity", "", "No scrape data this week.", ""]
    rows = [
        [
            escape(c.endpoint),
            display.count(c.intervals),
            display.budget(c.peak_kv_cache),
            display.count(c.preemptions),
            display.count(c.peak_waiting),
            display.count(c.mean_waiting),
        ]
        for c in d.capacity
    ]
    head = [
        "endpoint",
        "scrape intervals",
        "peak KV-cache use",
        "preemptions",
        "peak waiting",
        "mean waiting",
    ]
    return ["## Capacity", "", *table(head, rows, range(1, 6))]


def _latency(d: ReportData) -> list[str]:
    rows = [
        [
            escape(s.request_class),
            charts.KIND_LABELS[s.kind],
            display.count(s.count),
            display.seconds(s.p50),
            display.seconds(s.p95),
            display.seconds(s.p99),
        ]
        for s in d.latency
    ]
    out = [
        "## Latency (probes)",
        "",
        *table(["class", "measure", "probes", "P50", "P95", "P99"], rows, (2, 3, 4, 5)),
    ]
    head = ["class", "requests", *(charts.PART_LABELS[p] for p in BREAKDOWN_PARTS)]
    rows = []
    for b in d.breakdown:
        rows.append([escape(b.request_class), escape(display.breakdown_count(b)),
                     *(display.seconds(b.part(p)) for p in BREAKDOWN_PARTS)])  # fmt: skip
        rows.append(["from", "", *(escape(b.source(p) or "—") for p in BREAKDOWN_PARTS)])
        if b.population != "probe requests":  # pool means are not this class's probe requests
            rows.append(["over", escape(b.population), *("" for _ in BREAKDOWN_PARTS)])
    return out + table(head, rows, range(1, 2 + len(BREAKDOWN_PARTS)))


def render_markdown(d: ReportData) -> str:
    """``report.md`` text."""
    lines = [
        f"# {escape(d.title)} — {escape(d.week.label)}",
        "",
        f"{display.day(d.week.start)} to {display.day(d.week.end)} (end exclusive, {escape(d.timezone)}) · "
        f"data up to {display.when(d.end)} · generated {display.when(d.generated_at)}",
        "",
        d.week.definition + ".",  # the report's own words around a checked label: its `code` is markup
        "",
        *_headline(d),
        *_reader(d),
        *APPENDIX,
        *_slos(d),
        *report_tenants.markdown(d.tenants, escape, table),
        *budget.markdown(d.budget, escape, table),
        *maintenance.markdown(d.maintenance, escape, table, display.when, display.duration),
        *_incidents(d),
        *_failures(d),
        *_deployments(d),
        *_capacity(d),
        *_latency(d),
        *report_tail.markdown(
            d.tail, escape, table, d.bottleneck, d.traffic_tail, tenant_lines(d.tenant_tail)
        ),
        *report_contract.markdown_lines(d.contract),
        *report_goodput.markdown(d.goodput, escape, table, display),
        "Charts are in report.html and report.pdf.",
    ]
    return "\n".join(lines) + "\n"
