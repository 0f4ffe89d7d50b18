"""The simulator's surface check reads pages with prometheus_client's parser, never the monitor's
(issue 26: the simulator must not share the monitor's view of vLLM's page, or a sim-versus-real
comparison could agree by construction), and reads a held real page as its text says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from monitor.sim.surface import shapes

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "metrics" / "vllm-0.10.0-v1-glm-4.5-partial.txt"


def test_the_surface_check_does_not_load_the_monitors_parser() -> None:
    code = "import sys, monitor.sim.surface; print(sorted(m for m in sys.modules if m.startswith('monitor.scrape')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_a_held_real_page_reads_as_its_text_says() -> None:
    found = shapes(FIXTURE.read_text())
    # "# TYPE vllm:prefix_cache_queries_total counter", samples labelled engine and model_name
    queries = found["vllm:prefix_cache_queries_total"]
    assert (queries.kind, queries.labels, queries.buckets) == (
        "counter",
        frozenset({"engine", "model_name"}),
        (),
    )
    assert not any(name.endswith("_created") for name in found)
