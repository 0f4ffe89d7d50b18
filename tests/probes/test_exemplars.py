"""The probe latency histograms carry each run's trace id as an OpenMetrics exemplar, so Grafana
jumps from a latency spike to the trace: checked with a real Prometheus (exemplar storage on)
scraping the exporter the way it scrapes ``m3mon run`` (it asks for OpenMetrics first), and its
``query_exemplars`` API returning the trace ids of the probes that ran against the simulator."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest

from monitor import conventions as cv
from monitor.exporter import Exporter
from monitor.model import Model
from monitor.probes.result import ProbeResult
from monitor.probes.runner import plan_round, run_probe
from tests.support import localhttp
from tests.support.http import serving
from tests.support.prometheus import running_prometheus, wait_for

pytestmark = pytest.mark.timeout(90)


def _results(model: Model) -> list[ProbeResult]:
    async def go() -> list[ProbeResult]:
        async with httpx.AsyncClient() as client:
            return [await run_probe(p, client) for p in plan_round(model, kinds=["chat", "tool_call"])]

    return asyncio.run(go())


@contextmanager
def _serving(exporter: Exporter) -> Iterator[str]:
    """The exporter's /metrics over real HTTP, negotiated as the service's route does; yields host:port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body, content_type = exporter.render_for(self.headers.get("Accept", ""))
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        yield url.removeprefix("http://")


def test_the_text_format_has_no_exemplars_and_openmetrics_has_them(model: Model) -> None:
    exporter = Exporter(model)
    exporter.probes.observe_all(_results(model))
    assert " # {" not in exporter.render().decode()  # Prometheus text 0.0.4 cannot carry them
    body, content_type = exporter.render_for("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    assert f"{cv.PROBE_TTFT}_bucket" in body.decode() and '# {trace_id="' in body.decode()


def test_prometheus_stores_the_probe_trace_ids_as_exemplars(model: Model, tmp_path: Path) -> None:
    exporter = Exporter(model)
    results = [r for r in _results(model) if r.trace_id]
    assert results, "the probes send a traceparent and keep its trace id"
    exporter.probes.observe_all(results)
    with _serving(exporter) as target:
        config = {"global": {"scrape_interval": "1s"},
                  "scrape_configs": [{"job_name": "m3mon", "static_configs": [{"targets": [target]}]}]}  # fmt: skip
        with running_prometheus(config, tmp_path, extra_args=("--enable-feature=exemplar-storage",)) as url:

            def exemplar_ids() -> set[str] | None:
                r = localhttp.get(f"{url}/api/v1/query_exemplars", params={"query": f"{cv.PROBE_TTFT}_bucket",
                              "start": "0", "end": "4102444800"}, timeout=5).json()  # fmt: skip
                found = {e["labels"].get("trace_id") for s in r["data"] for e in s["exemplars"]}
                return {t for t in found if t} or None

            stored = wait_for(exemplar_ids, 30, "exemplars of the probe TTFT histogram")
    assert stored <= {r.trace_id for r in results} and stored
