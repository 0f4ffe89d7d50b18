"""The Slack-compatible summary posted to a webhook: ``text`` plus Block Kit ``blocks``.

Slack's mrkdwn has no backslash escape; ``&``, ``<`` and ``>`` are entity-escaped (the only
characters Slack asks to escape), which also stops labels from forming links or ``<!channel>``.
"""

from __future__ import annotations

from typing import Any

from monitor.report import display
from monitor.report.data import SOURCE_DERIVED, ReportData, SLOLine
from monitor.report.tenant_tail import reason
from monitor.report.tenants import scoped_summary

#: Slack allows at most 50 blocks; a section's text at most 3000 characters.
MAX_CLASSES = 40
MAX_TEXT = 2900
#: Tenants whose tail has another owner than their class's, named per class (the rest counted).
MAX_TENANT_TAILS = 3


def escape(text: object) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def headline(data: ReportData) -> str:
    """One line: the week and whether anything needs attention."""
    if data.attention:
        names = ", ".join(f"{escape(c.name)} ({display.status(c.status)})" for c in data.attention)
        return (
            f"{escape(data.title)} {escape(data.week.label)}: {len(data.attention)} need attention: {names}"
        )
    if data.status == "no_data":
        return f"{escape(data.title)} {escape(data.week.label)}: no SLO data this week"
    return f"{escape(data.title)} {escape(data.week.label)}: all SLOs met"


def _slo_line(s: SLOLine) -> str:
    return (
        f"• {escape(s.slo)}: {display.attainment(s.attainment)} (objective {display.objective(s.objective)}, "
        f"last week {display.attainment(s.attainment_previous)}, "
        f"budget left {display.budget(s.budget_remaining)})"
        + (f" {display.status(s.status)}: {escape(display.reason(s))}" if s.causes else "")
    )


def _incidents(data: ReportData) -> str:
    derived = sum(i.source == SOURCE_DERIVED for i in data.incidents)
    received = len(data.incidents) - derived
    parts = [f"{received} alert(s) fired"] if received else []
    parts += [f"{derived} incident(s) derived from the stored evaluations"] if derived else []
    return ", ".join(parts)


def _tenant_tails(data: ReportData, cls: str) -> list[str]:
    """The class's tenants whose tail has another owner (report/tenant_tail.py), the first few."""
    differing = next((t.differing for t in data.tenant_tail if t.request_class == cls), ())
    out = [f"• tail: {escape(reason(o))}" for o in differing[:MAX_TENANT_TAILS]]
    more = len(differing) - MAX_TENANT_TAILS
    return out + (
        [f"• tail: {more} more tenant tail(s) with another owner (report.json tenant_tail)"]
        if more > 0
        else []
    )


def payload(data: ReportData) -> dict[str, Any]:
    """The webhook body."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"{data.title} {data.week.label}"[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": headline(data)[:MAX_TEXT]}},
    ]
    for c in data.classes[:MAX_CLASSES]:
        lines = [f"{display.STATUS_ICON[c.status]} *{escape(c.name)}* {display.status(c.status)}"]
        lines += [_slo_line(s) for s in c.slos]
        scoped = scoped_summary(c)
        lines += [f"• {escape(scoped)}"] if scoped else []
        lines += _tenant_tails(data, c.name)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:MAX_TEXT]}})
    if data.incidents:
        blocks.append(
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": _incidents(data)}],
            }
        )
    return {"text": headline(data), "blocks": blocks}
