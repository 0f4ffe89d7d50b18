"""Report periods, status rules, Markdown escaping and the CLI."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.errors import ReportError
from monitor.report import markdown, periods
from monitor.report.data import slo_status, worst
from monitor.report.redact import Redactor
from tests.report import week as W
from tests.report.conftest import Built


def test_iso_weeks_in_a_timezone_and_across_dst() -> None:
    berlin = periods.zone("Europe/Berlin")
    wk = periods.iso_week("2026-W44", berlin)  # 26 Oct - 2 Nov 2026; DST ended 25 Oct
    assert wk.start.isoformat() == "2026-10-26T00:00:00+01:00" and wk.seconds == 7 * 86400
    dst = periods.iso_week("2026-W43", berlin)  # holds the switch back: one hour longer
    assert dst.seconds == 7 * 86400 + 3600
    assert periods.previous(wk).label == "2026-W43"
    now = datetime(2026, 11, 30, 9, tzinfo=UTC)
    assert periods.last_complete_week(now, periods.zone("UTC")).label == "2026-W48"
    assert periods.previous(periods.iso_week("2027-W01", berlin)).label == "2026-W53"


@pytest.mark.parametrize("bad", ["2026-48", "2026-W54", "W48", ""])
def test_bad_week_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ReportError, match="--week"):
        periods.iso_week(bad, periods.zone("UTC"))


def test_since() -> None:
    now = datetime(2026, 11, 30, 9, tzinfo=UTC)
    p = periods.since("36h", now)
    assert p.seconds == 36 * 3600 and p.end == now
    assert periods.previous(p).end == p.start
    with pytest.raises(ReportError, match="--since"):
        periods.since("0d", now)


def test_status_rules() -> None:
    assert slo_status(None, 0.99, None, None) == "no_data"
    assert slo_status(0.985, 0.99, 0.9, 0.1) == "missed"  # below the objective
    assert slo_status(0.999, 0.99, 0.0, 0.1) == "missed"  # budget exhausted
    assert slo_status(0.999, 0.99, 0.2, 0.1) == "at_risk"  # under 25 % left
    assert slo_status(0.999, 0.99, 0.9, 1.5) == "at_risk"  # last day burned too fast
    assert slo_status(0.999, 0.99, 0.25, 1.0) == "met"
    assert worst(["met", "no_data", "at_risk"]) == "at_risk" and worst([]) == "no_data"


def test_markdown_escape_and_redaction() -> None:
    assert markdown.escape("a|b\n# c") == "a\\|b # c"  # "#" mid-line starts nothing
    assert markdown.escape("# c") == "\\# c"
    assert markdown.escape("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    red = Redactor(["hunter2-secret"])
    assert red.text("pw hunter2-secret and Bearer abcdefgh123") == "pw [redacted] and [redacted]"
    assert red.labels({"token": "x", "class": "chat"}) == (("class", "chat"),)


def test_cli_writes_the_four_files(built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = ["report", "-c", built.week.model.source, "--week", W.WEEK, "-o", str(out), "--db", built.week.url]
    assert main([*argv, "--now", "2026-11-30T09:00:00+00:00"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "report.md", "report.pdf"]
    doc = json.loads((out / "report.json").read_text())
    assert doc["classes"][1]["slos"][0]["attainment"] == pytest.approx(332 / 336)
    assert str(out / "report.pdf") in capsys.readouterr().out


def test_cli_bad_week_exits_2(built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "report",
        "-c",
        built.week.model.source,
        "--week",
        "2026-W99",
        "-o",
        str(tmp_path),
        "--db",
        built.week.url,
    ]
    assert main(argv) == 2  # bad input
    assert "2026-W99" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_slo_status_week_is_the_reports_this_week(
    built: Built, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24, finding 5: "week" meant the calendar week to date in ``slo status`` and the
    report's period in the report, and neither said which. ``slo status --week`` shows the whole
    ISO week, counted as the report counts "this week": the same good and total events."""
    monkeypatch.setenv("M3MON_STORAGE_URL", built.week.url)
    assert main(["slo", "status", "-c", built.week.model.source, "--week", W.WEEK, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["week_definition"] == "week: the ISO week (Monday 00:00 UTC) up to the status time"
    assert doc["at"] == datetime(2026, 11, 30, tzinfo=UTC).timestamp()  # the week's end
    weeks = {
        (e["request_class"], e["slo_name"]): next(w for w in e["windows"] if w["window"] == "week")
        for e in doc["evaluations"]
    }
    report = json.loads((built.out / "report.json").read_text())
    lines = [(c["name"], s) for c in report["classes"] for s in c["slos"]]
    assert {(n, s["slo"]) for n, s in lines} == set(weeks)
    for name, s in lines:
        w = weeks[(name, s["slo"])]
        assert (w["good"], w["total"], w["attainment"]) == (s["good"], s["total"], s["attainment"]), name
    # the bottleneck verdicts of that week are the report's (docs/bottleneck.md): one computation
    assert doc["bottleneck"] == report["bottleneck"]
    assert main(["slo", "status", "-c", built.week.model.source, "--week", W.WEEK]) == 0
    text = capsys.readouterr().out
    assert (
        "\nweek: the ISO week (Monday 00:00 UTC) up to the status time; --week 2026-W48: that whole week\n"
        in text
    )
    assert text.rstrip().endswith("\n".join(f"  {v['class']}: {v['reason']}" for v in report["bottleneck"]))
    definition = (
        '"this week" is the ISO week 2026-W48, Monday to Monday; `m3mon slo status --week 2026-W48` '
        "counts the same events (in UTC)"
    )
    assert report["week_definition"] == definition
    assert definition in html.unescape(built.rendered.html)
    assert definition in (built.out / "report.md").read_text().replace("\\", "")
    assert main(["slo", "status", "-c", built.week.model.source, "--week", "2026-W99"]) == 2
    assert "--week: '2026-W99' is not a week of year 2026" in capsys.readouterr().err


def test_a_budget_reads_the_same_in_the_report_the_status_and_the_gate(
    built: Built, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24, finding 5: one budget left was printed as −240.51 %, −240.4 % and −240.438 %. Chat's
    availability has 1 − (3/360)/0.01 = 16.67 % of its budget left at the week's end (week.py):
    the report, ``slo status`` and ``budget gate`` all write it ``16.7%``."""
    monkeypatch.setenv("M3MON_STORAGE_URL", built.week.url)
    assert "16.7%" in (built.out / "report.md").read_text()
    assert main(["slo", "status", "-c", built.week.model.source, "--week", W.WEEK]) == 0
    (row,) = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("chat ") and " availability " in line
    ]
    assert " 16.7% " in f" {row} " and "16.667" not in row
    at = str(datetime(2026, 11, 30, tzinfo=UTC).timestamp())
    main(["budget", "gate", "-c", built.week.model.source, "--class", "chat", "--at", at, "--allow-stale"])
    assert "(lowest: availability 16.7%)" in capsys.readouterr().out
