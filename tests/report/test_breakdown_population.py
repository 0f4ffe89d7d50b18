"""Issue 24, finding 2: the breakdown's population equals the probe table's, or its label names
the pool. A class on its own pool (``dedicated_pool: true``) whose probes carry no server view
takes its breakdown from the pool's histograms: all of the pool's requests, not its probes. Every
format then says over whose requests the means are, and no caption calls them probe requests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from monitor.model import Model
from monitor.probes.result import ProbeResult, Timings
from monitor.scrape.signals import EngineSignals, Histogram, Signals
from monitor.store.ops import Op, probe_op, signals_op
from tests.report.stores import WEEK, rendered, stored
from tests.report.test_numbers import html_text
from tests.support.real import require_binary

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep-long, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [long]}
request_classes:
  - {name: long, max_context_tokens: 32768, dedicated_pool: true, probes: [chat],
     slos: [{name: a, sli: availability, objective: 99}]}
report: {timezone: UTC}
"""
T = WEEK.start.timestamp()
POOL = "all requests of ep-long (the class's own pool)"


def _interval(end: float) -> Signals:
    def h(total: float, n: float) -> Histogram:
        return Histogram((1.0, float("inf")), (n, n), total, n)

    eng = EngineSignals(finished={"stop": 40.0},
                        histograms={"queue": h(80.0, 40.0), "prefill": h(240.0, 40.0), "decode": h(160.0, 40.0)})  # fmt: skip
    return Signals("ep-long", "vllm", "vllm-v1-engine", "m", end, end - 3600, False, {"0": eng}, eng)


def test_a_pool_breakdown_names_its_population_in_every_format(tmp_path: Path) -> None:
    def ops(model: Model) -> list[Op]:
        bare = Timings(ttft=0.5, e2e=0.8)  # no per-request metrics, no trace: no server view
        runs = [ProbeResult("ep-long", "long", "chat", T + 600 * k, None, bare, finished_at=T + 600 * k + 1)
                for k in range(1, 4)]  # fmt: skip
        scrapes = [signals_op(model, "ep-long", _interval(T + h * 3600)) for h in (1, 2)]
        return [*(probe_op(model, r) for r in runs), *scrapes]

    model, url = stored(tmp_path, CONFIG, ops)
    report = rendered(model, url)
    doc = json.loads(report.json)
    brk, own = doc["breakdown"]
    probes = {x["kind"]: x["count"] for x in doc["latency"] if x["class"] == "long"}
    assert probes["e2e"] == 3 and brk["prefill_seconds"] == 240.0 / 40.0  # the pool's mean, not the probes'
    # the probe table's population (3 probe runs) is not the breakdown's (80 pool requests): labelled,
    # and each row counts the population its means are over (the probes' own parts a row apart)
    assert brk["population"] == POOL and "ep-long" in brk["sources"]["prefill"]
    assert brk["count"] == 80 and (own["count"], own["population"]) == (3, "probe requests")
    assert own["prefill_seconds"] is None
    assert "| long | 80 pool requests |" in report.markdown and "| long | 3 probes |" in report.markdown
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(report.pdf)
    exe = require_binary("pdftotext", "/usr/bin/pdftotext")
    pdf_text = " ".join(subprocess.run([exe, str(pdf), "-"], capture_output=True, timeout=60,
                                       check=True).stdout.decode().split())  # fmt: skip
    texts = {"html": html_text(report.html), "md": report.markdown.replace("\\", ""), "pdf": pdf_text}
    for fmt, text in texts.items():
        assert POOL in " ".join(text.split()), f"{fmt} does not name the pool population"
        assert "probe request's time" not in text, f"{fmt} calls the pool's means probe requests'"
