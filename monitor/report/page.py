"""``report.html``: the report as one self-contained page (inline CSS, charts as PNG data URIs).

Rendered by Jinja2 with autoescaping on, so class names, alert labels and probe details that
reach the page are text, never markup. The same HTML feeds the PDF (:mod:`monitor.report.pdf`).
"""

from __future__ import annotations

import base64
from functools import cache
from importlib import resources

import jinja2
import markupsafe

from monitor.report import charts, display
from monitor.report import contract as report_contract
from monitor.report import tail as report_tail
from monitor.report import tenants as report_tenants
from monitor.report.breakdown import PROBE_REQUESTS
from monitor.report.data import ReportData
from monitor.report.latency_data import BREAKDOWN_PARTS
from monitor.report.tenant_tail import lines as tenant_lines

TEMPLATE = "report.html.j2"
STYLESHEET = "report.css"


@cache
def environment() -> jinja2.Environment:
    """The Jinja2 environment with the report's number filters (autoescape always on)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("monitor.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        attainment=display.attainment,
        budget=display.budget,
        objective=display.objective,
        burn=display.burn,
        seconds=display.seconds,
        duration=display.duration,
        count=display.count,
        threshold=display.threshold,
        when=display.when,
        day=display.day,
        status=display.status,
        reason=display.reason,
        previous=display.previous_label,
        breakdown_count=display.breakdown_count,
        kind=lambda k: charts.KIND_LABELS.get(k, k),
        part=lambda p: charts.PART_LABELS.get(p, p),
        reader=display.reader_line,
        costly=display.costly_line,
        deployment=display.deployment_line,
        step=display.duration,
        tenant_heading=report_tenants.heading,
        tenant_rows=report_tenants.html_rows,
        tenant_more=report_tenants.more_line,
        scoped_summary=report_tenants.scoped_summary,
    )
    return env


def data_uri(png: bytes | None) -> str | None:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii") if png else None


def stylesheet() -> str:
    return resources.files("monitor.report").joinpath("templates").joinpath(STYLESHEET).read_text("utf-8")


def render_html(data: ReportData) -> str:
    """The whole page as a string."""
    tz = data.week.start.tzinfo
    burn_charts = []
    for c in data.classes:
        png = charts.burn_down([s for s in data.series if s.request_class == c.name], tz)
        if png is not None:
            burn_charts.append((c.name, data_uri(png)))
    hours = data.deployment_window_hours
    return (
        environment()
        .get_template(TEMPLATE)
        .render(
            d=data,
            css=markupsafe.Markup(stylesheet()),  # our own file, never user text
            parts=BREAKDOWN_PARTS,
            window=f"{hours}h",
            hours=hours,
            burn_charts=burn_charts,
            latency_chart=data_uri(charts.latency(data.latency)),
            breakdown_chart=data_uri(charts.breakdown(data.breakdown)),
            breakdown_time_chart=data_uri(
                charts.breakdown_over_time(
                    data.breakdown_series,
                    tz,
                    {b.request_class: b.population for b in data.breakdown if b.population != PROBE_REQUESTS},
                )
            ),
            contract_html=report_contract.html(data.contract),
            tail=report_tail.rendered(
                data.tail, data.bottleneck, data.traffic_tail, tenant_lines(data.tenant_tail)
            ),
            tail_tenant_heading=report_tail.TENANT_HEADING,
            tenants_intro=report_tenants.INTRO,
            tenants_head=report_tenants.HEAD,
            scope_words=report_tenants.SCOPE_WORDS,
        )
    )
