"""The four outputs show the store's numbers for the constructed week (tests/report/week.py)."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser

import pytest

from tests.report import week as W
from tests.report.conftest import Built
from tests.support.real import require_binary

#: Hand-counted from what week.py wrote (see its docstring).
EXPECTED_SLOS = {
    ("chat", "availability"): dict(good=84, total=84, attainment=1.0, attainment_previous=81 / 84,
                                   budget_remaining=1 - (3 / 360) / 0.01, burn_rate=0.0, status="at_risk"),
    ("chat", "ttft-p95"): dict(good=97 * 168, total=100 * 168, attainment=0.97, attainment_previous=None,
                               budget_remaining=1 - 0.03 / 0.05, burn_rate=0.03 / 0.05, status="met"),
    ("agent", "availability"): dict(good=332, total=336, attainment=332 / 336, attainment_previous=1.0,
                                    budget_remaining=1 - (4 / 1440) / 0.005, burn_rate=(4 / 336) / 0.005,
                                    status="missed"),
    ("agent", "correctness"): dict(good=332, total=332, attainment=1.0, attainment_previous=1.0,
                                   budget_remaining=1.0, burn_rate=0.0, status="met"),
    ("empty", "availability"): dict(good=0, total=0, attainment=None, attainment_previous=None,
                                    budget_remaining=None, burn_rate=None, status="no_data"),
}  # fmt: skip

#: The same numbers as a reader sees them; each must appear in HTML, Markdown and PDF.
SHOWN = ["98.810%", "96.429%", "97.000%", "100.000%", "16.7%", "40.0%", "44.4%", "2.38×", "0.60×",
         "16,296 / 16,800", "332 / 336", "55.6%", "4 / 7.2", "2h 00m", "87.0%", "2026-11-25 10:00",
         "2026-11-26 12:00", "0.10.1", "0.11.0", "400 ms", "2.50 s", "500 ms", "3.00 s", "99.5%"]  # fmt: skip


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skip = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.skip = tag in ("style", "script")

    def handle_endtag(self, tag: str) -> None:
        self.skip = False

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_text(html: str) -> str:
    p = _Text()
    p.feed(html)
    return " ".join(" ".join(p.parts).split())


def pdf_text(built: Built) -> str:
    exe = require_binary("pdftotext", "/usr/bin/pdftotext")
    out = subprocess.run([exe, "-layout", str(built.out / "report.pdf"), "-"], capture_output=True, timeout=60,
                         check=True)  # fmt: skip
    return out.stdout.decode()


def test_json_numbers_equal_the_store(built: Built) -> None:
    doc = json.loads((built.out / "report.json").read_text())
    assert doc["schema"] == "m3mon.report/v1"
    assert doc["week"] == {
        "label": "2026-W48",
        "start": "2026-11-23T00:00:00+00:00",
        "end": "2026-11-30T00:00:00+00:00",
        "history_seconds": None,  # the store holds the whole week
    }
    lines = {(c["name"], s["slo"]): s for c in doc["classes"] for s in c["slos"]}
    assert set(lines) == set(EXPECTED_SLOS)
    for key, want in EXPECTED_SLOS.items():
        for field, value in want.items():
            got = lines[key][field]
            assert got == (pytest.approx(value) if isinstance(value, float) else value), (key, field, got)
    assert {c["name"]: c["status"] for c in doc["classes"]} == {
        "chat": "at_risk",
        "agent": "missed",
        "empty": "no_data",
    }
    assert doc["status"] == "missed" and doc["attention"] == ["agent", "chat"]


def test_json_incident_costs_capacity_and_probes(built: Built) -> None:
    doc = json.loads((built.out / "report.json").read_text())
    (inc,) = doc["incidents"]
    assert inc["duration_seconds"] == 7200 and inc["class"] == "agent" and inc["severity"] == "page"
    (cost,) = inc["budget_costs"]
    assert cost == {"slo": "agent/availability", "bad_events": 4, "allowed_bad_events": pytest.approx(7.2),
                    "share": pytest.approx(4 / 7.2)}  # fmt: skip
    cap = {c["endpoint"]: c for c in doc["capacity"]}
    assert cap["ep-a"] == {"endpoint": "ep-a", "intervals": 168, "peak_kv_cache_usage": 0.87, "preemptions": 3.0,
                           "peak_waiting": 7.0, "mean_waiting": pytest.approx(174 / 168)}  # fmt: skip
    assert cap["ep-b"]["intervals"] == 0 and cap["ep-b"]["peak_kv_cache_usage"] is None
    assert [(f["class"], f["category"], f["count"]) for f in doc["probe_failures"]] == [
        ("agent", "timeout", 4)
    ]
    lat = {(x["class"], x["kind"]): x for x in doc["latency"]}
    assert lat[("chat", "ttft")]["count"] == 84 and lat[("chat", "ttft")]["p99_seconds"] == pytest.approx(0.4)
    assert lat[("agent", "e2e")]["count"] == 332 and lat[("empty", "ttft")]["p50_seconds"] is None
    brk = {b["class"]: b for b in doc["breakdown"]}
    assert brk["agent"]["tool_turnaround_seconds"] == pytest.approx(0.5)
    assert brk["chat"]["tool_turnaround_seconds"] is None and brk["chat"]["decode_seconds"] == pytest.approx(
        2.5
    )
    (dep,) = doc["deployments"]
    assert dep["changes"] == [{"field": "vllm_version", "before": "0.10.1", "after": "0.11.0"}]
    # a week of data: three-hourly points from the first event (Mon 01:00) to the week's end
    assert doc["series_step_seconds"] == 10800 and doc["as_of"] == "2026-11-30T00:00:00+00:00"
    chat = doc["series"][0]
    assert len(doc["series"]) == 5 and (chat["class"], chat["slo"]) == ("chat", "availability")
    assert [p["at"] for p in chat["points"][:2]] == ["2026-11-23T03:00:00+00:00", "2026-11-23T06:00:00+00:00"]
    assert len(chat["points"]) == 56 and chat["points"][-1]["at"] == "2026-11-30T00:00:00+00:00"
    # chat probes every 2 h on even hours: one in (00:00, 03:00], two in (03:00, 06:00]; 84 in the week
    assert [p["events"] for p in chat["points"][:2]] == [1, 2] and sum(
        p["events"] for p in chat["points"]
    ) == 84


@pytest.mark.parametrize("fmt", ["html", "md", "pdf"])
def test_every_output_shows_the_same_numbers(built: Built, fmt: str) -> None:
    if fmt == "html":
        text = html_text(built.rendered.html)
    elif fmt == "md":
        text = (built.out / "report.md").read_text()
    else:
        text = " ".join(pdf_text(built).split())
    missing = [s for s in SHOWN if s not in text]
    assert not missing, f"{fmt} lacks {missing}"


def test_no_data_is_said_never_shown_as_full(built: Built) -> None:
    md = (built.out / "report.md").read_text()
    assert (
        "| empty | availability | 99% / 30d | no data | no data | 0 / 0 | no data | no data | no data | no data |"
        in md
    )
    row = html_text(built.rendered.html).split("empty")[1][:200]
    assert "no data" in row and "100.000%" not in row


def test_hostile_text_is_escaped_and_secrets_never_appear(built: Built) -> None:
    html = built.rendered.html
    md = (built.out / "report.md").read_text()
    js = (built.out / "report.json").read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;script&gt;" in md and "<script>" not in md
    assert not re.search(r"(?<!\\)\]\(javascript", md) and "\\[x\\](javascript:alert(1))" in md
    assert "\\| \\*\\*bold\\*\\*" in md  # cannot break a table or start emphasis
    assert W.HOSTILE in json.loads(js)["probe_failures"][0]["example"]  # JSON keeps the text as data
    for out in (html, md, js, pdf_text(built), built.rendered.markdown):
        assert W.API_KEY not in out and "SECRETSECRET" not in out
    assert "api_key" not in json.loads(js)["incidents"][0]["labels"]


#: The reader's summary of the constructed week, worded by hand from the numbers above. Budget at
#: the end of last week, over the 30 days to Mon 2026-11-23: chat 3 timeouts of 276 probes,
#: 1 - (3 / 276) / 0.01 = -8.7 %; agent none of 1,104: 100.0 %.
READER = [
    "chat: at risk — availability 100.000% against 99%; 16.7% of its 30d error budget left (last week "
    "overspent by 8.7%); no incident; +3.571 points against last week.",
    "agent: missed — availability 98.810% against 99.5%; 44.4% of its 30d error budget left (last week 100.0% "
    "left); the page incident of 2026-11-25 10:00 cost 55.6% of it; -1.190 points against last week.",
    "empty: no data — nothing was measured.",
]


def test_the_readers_summary_says_each_class_in_one_line(built: Built) -> None:
    doc = json.loads((built.out / "report.json").read_text())
    assert [r["text"] for r in doc["reader"]] == READER
    agent = doc["reader"][1]
    assert (agent["slo"], agent["incident"]["alertname"], agent["incident"]["source"]) == (
        "availability", "M3SLOBurn", "alertmanager")  # fmt: skip
    assert agent["incident"]["share"] == pytest.approx(4 / 7.2)
    text = html_text(built.rendered.html)
    assert all(line in text for line in READER)
    md = (built.out / "report.md").read_text()
    assert "## In short" in md and "\\-1.190 points" not in md and "-1.190 points against last week" in md


@pytest.mark.parametrize("fmt", ["html", "md", "pdf"])
def test_the_budget_verdict_is_said_once(built: Built, fmt: str) -> None:
    """Issue 24, finding 8: the policy's line was printed after the report's own verdict word
    ("frozen: frozen: …", "open: ok: …")."""
    text = {"html": lambda: html_text(built.rendered.html), "md": lambda: (built.out / "report.md").read_text(),
            "pdf": lambda: " ".join(pdf_text(built).split())}[fmt]().replace("\\", "")  # fmt: skip
    assert "deploys open: agent: every SLO has at least 10 % of its budget left" in text
    assert "open: ok:" not in text and "frozen: frozen:" not in text


def test_incident_costs_never_exceed_the_weeks_bad_events(built: Built) -> None:
    """Issue 24's identity: incident costs of an SLO sum to at most its bad events of the week
    (a cost reaches back over the window that fired it, never into another incident or week)."""
    doc = json.loads((built.out / "report.json").read_text())
    bad = {f"{c['name']}/{s['slo']}": s["total"] - s["good"] for c in doc["classes"] for s in c["slos"]}
    charged: dict[str, float] = {}
    for incident in doc["incidents"]:
        for cost in incident["budget_costs"]:
            charged[cost["slo"]] = charged.get(cost["slo"], 0.0) + cost["bad_events"]
    assert charged and all(charged[slo] <= bad[slo] for slo in charged), (charged, bad)
    assert charged["agent/availability"] == bad["agent/availability"] == 4  # the incident's four failures


#: The constructed week's deployment change in plain words (week.py: ep-a 0.10.1 -> 0.11.0 on Thu
#: 12:00; every SLO of ep-a has the same attainment in the 24 h on either side).
DEPLOYED = ("Deployment: ep-a changed at 2026-11-26 12:00: vllm_version 0.10.1 → 0.11.0; no SLO's "
            "attainment moved in the 24h before and after it.")  # fmt: skip


def test_page_one_says_what_changed_in_the_deployment(built: Built) -> None:
    """Issue 24: page one stands alone, with what changed in the deployment — on the PDF's first
    page, in the HTML and Markdown summaries (before the SLO table), and as the JSON's text."""
    exe = require_binary("pdftotext", "/usr/bin/pdftotext")
    page1 = subprocess.run([exe, "-f", "1", "-l", "1", str(built.out / "report.pdf"), "-"], capture_output=True,
                           timeout=60, check=True).stdout.decode()  # fmt: skip
    assert DEPLOYED in " ".join(page1.split())
    html = html_text(built.rendered.html)
    assert DEPLOYED in html.split("SLOs by request class")[0]
    md = (built.out / "report.md").read_text().replace("**", "").replace("\\", "")
    assert DEPLOYED in md.split("## SLOs by request class")[0]
    (dep,) = json.loads((built.out / "report.json").read_text())["deployments"]
    assert "Deployment: " + dep["text"] == DEPLOYED
