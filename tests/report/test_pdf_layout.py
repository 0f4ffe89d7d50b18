"""No table of the PDF runs off its page (issue 24, finding 1: the Incidents table was cut at the
page edge — "burned its erro", "budget at up to" — and its summary column lost). A report with
the demo's longest names and summaries is printed by the real Chromium; poppler's ``pdftotext
-bbox`` gives every word's box: each one lies inside the page's printable width, and every word of
every summary is there."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from monitor.store.ops import alertmanager_op
from tests.report.stores import rendered, stored
from tests.support.real import require_binary

CLASSES = ("repo-analysis-128k", "interactive-32k", "extended-context")
CONFIG = "version: m3mon/v1\nendpoints:\n" + "".join(
    f'  - {{name: m3-pool-{c}, base_url: "http://127.0.0.1:9", backend: vllm, model: MiniMaxAI/MiniMax-M3, classes: [{c}]}}\n'
    for c in CLASSES
) + "request_classes:\n" + "".join(
    f"  - {{name: {c}, max_context_tokens: 32768, probes: [chat], slos: [{{name: queue-time-p95, sli: queue_time, "
    f"threshold: 500ms, objective: 95, source: server}}, {{name: availability, sli: availability, objective: 99.9}}]}}\n"
    for c in CLASSES
) + "report: {timezone: UTC}\n"  # fmt: skip
SUMMARY = ("{cls}/queue-time-p95 burned its error budget at up to 26.67× the sustainable rate (1h); "
           "derived from the stored burn evaluations while the pool m3-pool-{cls} was saturated")  # fmt: skip
#: A4 width in points, less the 12 mm right margin of report.css's @page.
RIGHT_EDGE = 595.28 - 12 / 25.4 * 72


def _alert(cls: str, k: int, name: str) -> dict[str, object]:
    labels = {"alertname": name, "class": cls, "slo": "queue-time-p95", "severity": "ticket",
              "endpoint": f"m3-pool-{cls}"}  # fmt: skip
    alert = {"status": "resolved", "fingerprint": f"f{k}", "labels": labels,
             "startsAt": f"2026-11-2{4 + k % 5}T1{k % 10}:00:00Z", "endsAt": f"2026-11-2{4 + k % 5}T1{k % 10}:45:00Z",
             "annotations": {"summary": SUMMARY.format(cls=cls)}}  # fmt: skip
    return {"version": "4", "status": "resolved", "alerts": [alert]}


def test_no_pdf_word_runs_off_the_page(tmp_path: Path) -> None:
    pdftotext = require_binary("pdftotext", "/usr/bin/pdftotext")
    names = ("SLOErrorBudgetBurnTicket", "SLOErrorBudgetBurnPage", "SLOErrorBudgetExhausted")
    alerts = [
        alertmanager_op(_alert(c, k, names[k % 3]), 1_764_000_000.0 + k) for k, c in enumerate(CLASSES * 3)
    ]
    model, url = stored(tmp_path, CONFIG, lambda _: alerts)
    report = rendered(model, url)
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(report.pdf)
    boxes = subprocess.run([pdftotext, "-bbox", str(pdf), "-"], capture_output=True, text=True, timeout=60,
                           check=True).stdout  # fmt: skip
    words = re.findall(
        r'<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</word>', boxes
    )
    assert words
    off = [(w, float(x1)) for x0, x1, w in words if float(x1) > RIGHT_EDGE + 1]
    assert not off, f"{len(off)} words beyond the printable width, e.g. {off[:6]}"
    text = " ".join(w for _, _, w in words)
    for cls in CLASSES:  # every summary whole: its last words are printed, not cut off
        assert f"m3-pool-{cls} was saturated" in text.replace("- ", "-"), cls
