"""Page one stands alone, and every output prints one value one way (issue 24).

The store is the constructed week of tests/report/week.py with more this week: five more page
alerts of ``agent``/availability (Mon, Tue, Thu, Fri and Sat 10:00-11:00, with 1, 2, 3, 5 and 6
timed-out probes inside each, so with Wednesday's 4 the six incidents cost six different shares),
one of ``chat``/availability (Thu 20:00-21:00, one timeout), and two deployment changes of ep-a that
turn prefix caching off and on again. Every expected string is read from report.json and written
with the documented rounding (docs/report.md, monitor/slo/numbers.py: budget 1 decimal,
attainment 3, "no data" for null), never with the report's own formatters.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from monitor.probes.result import ProbeResult, Timings
from monitor.report import generate, periods
from monitor.store import DeploymentFingerprint, Store
from monitor.store.ops import alertmanager_op, deployment_op, probe_op
from tests.report import week as W
from tests.report.conftest import Built
from tests.report.test_numbers import html_text, pdf_text
from tests.support.real import require_binary

HOUR = 3600.0
#: (class, day of the week 0 = Monday, hour, timed-out probes inside the hour)
ALERTS = [("agent", d, 10, n) for d, n in ((0, 1), (1, 2), (3, 3), (4, 5), (5, 6))] + [("chat", 3, 20, 1)]
#: Page one names this many incidents per class, largest cost first (docs/report.md, "In short").
NAMED = 5
APPENDIX = "Appendix for SREs"
#: docs/report.md, "Status": how each status is written.
STATUS_WORDS = {"met": "met", "at_risk": "at risk", "missed": "missed", "no_data": "no data"}


@dataclass(frozen=True)
class Page:
    doc: dict[str, Any]
    html: str
    md: str
    pdf: Path


def _alert(cls: str, k: int, start: float, end: float) -> dict[str, object]:
    def iso(t: float) -> str:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    alert = {"status": "resolved", "fingerprint": f"page-one-{k}", "startsAt": iso(start), "endsAt": iso(end),
             "labels": {"alertname": "M3SLOBurn", "class": cls, "slo": "availability", "severity": "page"},
             "annotations": {"summary": f"{cls} availability burning"}}  # fmt: skip
    return {"version": "4", "status": "resolved", "alerts": [alert]}


def _extra_ops(wk: W.Week) -> list[Any]:
    ops: list[Any] = []
    for k, (cls, day, hour, timeouts) in enumerate(ALERTS):
        start = W.START + day * W.DAY + hour * HOUR
        kind = "agent_session" if cls == "agent" else "chat"
        for n in range(timeouts):  # off the regular probes' grid, inside the alert's hour
            at = start + (n + 1) * 120.0
            ops.append(
                probe_op(wk.model, ProbeResult("ep-a", cls, kind, at, "timeout", Timings(), finished_at=at))
            )
        ops.append(alertmanager_op(_alert(cls, k, start, start + HOUR), start + HOUR))
    for day, caching in ((4, False), (5, True)):
        fp = DeploymentFingerprint(vllm_version="0.11.0", max_model_len=32768, prefix_caching=caching)
        ops.append(deployment_op("ep-a", fp, W.START + day * W.DAY + 12 * HOUR))
    return ops


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    tmp = tmp_path_factory.mktemp("page-one")
    old = os.environ.get("M3MON_REPORT_TEST_KEY")
    os.environ["M3MON_REPORT_TEST_KEY"] = W.API_KEY
    try:
        wk = W.build(tmp)
        store = Store(wk.url)
        try:
            store.apply(_extra_ops(wk))
            data = generate.build(wk.model, store, periods.iso_week(W.WEEK, periods.zone("UTC")), W.NOW)
        finally:
            store.close()
        rendered = generate.render(data)
        paths = generate.write(rendered, tmp / "out")
        yield Page(json.loads(rendered.json), rendered.html, rendered.markdown, paths["report.pdf"])
    finally:
        if old is None:
            os.environ.pop("M3MON_REPORT_TEST_KEY", None)
        else:
            os.environ["M3MON_REPORT_TEST_KEY"] = old


def _pdf_page(pdf: Path, number: int) -> str:
    exe = require_binary("pdftotext", "/usr/bin/pdftotext")
    out = subprocess.run([exe, "-f", str(number), "-l", str(number), str(pdf), "-"], capture_output=True,
                         timeout=60, check=True).stdout.decode()  # fmt: skip
    return " ".join(out.split()).replace("- ", "-")  # a line broken after a name's hyphen


def _budget(ratio: float) -> str:
    """docs/report.md: budget left with one decimal."""
    return f"{ratio * 100:.1f}%"


def _attainment(ratio: float) -> str:
    """docs/report.md: attainment with three decimals."""
    return f"{ratio * 100:.3f}%"


def _when(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M")


def _left(ratio: float | None, before: bool) -> str:
    """Budget left as page one words it, now ("44.4% of its …") or last week ("last week …")."""
    if ratio is None:
        return "no data last week" if before else "no events in its"
    if before:
        return (
            f"last week {_budget(ratio)} left" if ratio >= 0 else f"last week overspent by {_budget(-ratio)}"
        )
    return f"{_budget(ratio)} of its" if ratio >= 0 else f"overspent by {_budget(-ratio)}"


def _costly(doc: dict[str, Any], cls: str) -> list[tuple[float, str]]:
    """The class's incidents that cost budget, from the appendix's incidents[], as page one names
    them (severity, start, then each SLO's share), largest share first."""
    out = []
    for i in doc["incidents"]:
        costs = [(c["slo"].split("/", 1)[1], c["share"]) for c in i["budget_costs"]
                 if c["slo"].startswith(f"{cls}/") and c["share"]]  # fmt: skip
        if costs:
            named = ", ".join(f"{slo} {_budget(share)}" for slo, share in costs)
            out.append((max(s for _, s in costs), f"{i['severity']} {_when(i['started_at'])}: {named}"))
    return sorted(out, key=lambda x: -x[0])


def _page_one(page: Page, fmt: str) -> str:
    if fmt == "pdf":
        return _pdf_page(page.pdf, 1)
    text = html_text(page.html) if fmt == "html" else page.md.replace("\\", "").replace("**", "")
    assert APPENDIX in text, f"{fmt} has no appendix heading"
    return text.split(APPENDIX)[0]


@pytest.mark.parametrize("fmt", ["pdf", "html", "md"])
def test_page_one_holds_status_budget_trend_and_every_costly_incident(page: Page, fmt: str) -> None:
    one = _page_one(page, fmt)
    doc = page.doc
    assert len(doc["incidents"]) == 7
    missing = []
    for r in doc["reader"]:
        cls = r["class"]
        want = [f"{cls}: {STATUS_WORDS[r['status']]}"]
        if r["slo"] is not None:
            want += [_left(r["budget_remaining"], False), _left(r["budget_remaining_previous"], True)]
        costly = _costly(doc, cls)
        want += [text for _, text in costly[:NAMED]]
        if len(costly) > NAMED:
            want.append(f"and {len(costly) - NAMED} more in the appendix")
        missing += [(cls, w) for w in want if w not in one]
    assert not missing, f"page one ({fmt}) lacks {missing}"
    assert len(_costly(doc, "agent")) == 6 and len(_costly(doc, "chat")) == 1  # the store's incidents
    assert doc["reader"][0]["budget_remaining_previous"] is not None  # a trend to show, not "no data"


def test_the_appendix_starts_on_pdf_page_two(page: Page) -> None:
    assert APPENDIX not in _pdf_page(page.pdf, 1)
    assert _pdf_page(page.pdf, 2).startswith(APPENDIX)


#: Python reprs and ASCII comparisons that must never reach a reader (issue 24, finding 8).
REPRS = [r"Decimal\(", r"datetime\.", r"\bNone\b", r"\bTrue\b", r"\bFalse\b", r"\{'", r"\[<", r"\('",
         r"object at 0x", r"\bnan\b", r"\binf\b", r"<\s*\d", r"<=", r">="]  # fmt: skip


@pytest.mark.parametrize("fmt", ["pdf", "html", "md"])
def test_no_output_shows_a_python_repr_or_an_ascii_threshold(page: Page, fmt: str) -> None:
    """Thresholds are "≤" as the SLIs define them; settings read "on"/"off" and "—", not Python's
    ``True``/``False``/``None`` (here: the deployment changes of prefix caching)."""
    if fmt == "pdf":
        exe = require_binary("pdftotext", "/usr/bin/pdftotext")
        text = subprocess.run(
            [exe, str(page.pdf), "-"], capture_output=True, timeout=60, check=True
        ).stdout.decode()
    else:
        text = html_text(page.html) if fmt == "html" else page.md.replace("\\", "")
    found = [(p, text[max(0, m.start() - 60) : m.end() + 20]) for p in REPRS for m in re.finditer(p, text)]
    assert not found, f"{fmt}: {found[:5]}"
    assert "prefix_caching off → on" in " ".join(text.split())
    assert "≤ 2.50 s" in text


def _values(doc: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(what, as printed, other roundings of it that must not be printed) for every attainment,
    budget left (now and last week) and incident cost of report.json."""
    out = []
    for c in doc["classes"]:
        for s in c["slos"]:
            name = f"{c['name']}/{s['slo']}"
            for key in ("attainment", "attainment_previous"):
                v = s[key]
                if v is not None:
                    out.append((f"{name} {key}", _attainment(v), [f"{v * 100:.{d}f}%" for d in (1, 2)]))
            for key in ("budget_remaining", "budget_remaining_previous"):
                v = s[key]
                if v is not None:
                    out.append((f"{name} {key}", _budget(v), [f"{v * 100:.{d}f}%" for d in (2, 3)]))
    for i in doc["incidents"]:
        for cost in i["budget_costs"]:
            v = cost["share"]
            out.append((f"incident {cost['slo']}", _budget(v), [f"{v * 100:.{d}f}%" for d in (2, 3)]))
    return out


def _printed(value: str, text: str) -> bool:
    return re.search(r"(?<![\d.])" + re.escape(value), text) is not None


@pytest.mark.parametrize("fmt", ["html", "md", "pdf"])
def test_each_value_of_report_json_is_printed_one_way_in_every_format(built: Built, fmt: str) -> None:
    """Issue 24, finding 5: one budget left was printed as −240.51 %, −240.4 % and −240.438 %. Each
    value read from report.json is printed with its documented rounding, and never with another."""
    doc = json.loads((built.out / "report.json").read_text())
    if fmt == "html":
        text = html_text(built.rendered.html)
    elif fmt == "md":
        text = (built.out / "report.md").read_text().replace("\\", "")
    else:
        text = " ".join(pdf_text(built).split())
    values = _values(doc)
    assert len(values) >= 15 and any("budget_remaining_previous" in what for what, _, _ in values)
    shown = {v for _, v, _ in values}
    missing = [(what, v) for what, v, _ in values if not _printed(v, text)]
    assert not missing, f"{fmt} lacks {missing}"
    other = [
        (what, alt) for what, _, alts in values for alt in alts if alt not in shown and _printed(alt, text)
    ]
    assert not other, f"{fmt} prints values with another rounding: {other}"
