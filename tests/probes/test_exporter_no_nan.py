"""The exporter never publishes NaN, nor empty histograms for what a probe kind never measures.

Real probes of every kind run against the simulator and are observed by the monitor's exporter;
its SLO gauges take one evaluation with data and one without (windows with no valid events). The
rendered page is parsed with prometheus_client's own parser. "No data" must be no series (as the
README promises, and as the generated records do), never a NaN sample; a histogram of a measurement
a kind does not make (tool turnaround of a chat probe, long-prompt TTFT of an image probe) must
not exist, since its panel would read 0/0 = NaN.
"""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitor import conventions as cv
from monitor.exporter import Exporter
from monitor.model import Model
from monitor.probes.result import ProbeResult
from monitor.probes.runner import plan_round, run_probe
from monitor.slo.evaluate import evaluate_slices
from monitor.slo.slices import slices_from_probe

pytestmark = pytest.mark.timeout(90)

#: Histograms that exist only for the kinds that measure them (not the SLI histograms, which the
#: exporter creates at 0 for every probed kind so the rules see a failure reason's first run).
MEASURED_BY_SOME = (cv.PROBE_TOOL_TURNAROUND, cv.PROBE_LONG_PROMPT_TTFT)


def _results(model: Model) -> list[ProbeResult]:
    async def go() -> list[ProbeResult]:
        async with httpx.AsyncClient() as client:
            return [await run_probe(p, client) for p in plan_round(model)]

    return asyncio.run(go())


def _samples(exporter: Exporter) -> list[tuple[str, dict[str, str], float]]:
    text = exporter.render().decode()
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def test_no_nan_sample_and_no_empty_histogram_of_an_unmeasured_kind(model: Model) -> None:
    exporter = Exporter(model)
    results = _results(model)
    assert {r.kind for r in results} >= {"chat", "tool_call", "image", "long_prompt", "agent_session"}
    assert all(r.ok for r in results), [(r.kind, r.reason, r.detail) for r in results]
    exporter.probes.observe_all(results)
    at = max(r.started_at for r in results) + 60
    slices = [s for r in results for s in slices_from_probe(model, r)]
    (with_data, empty) = model.slos[0], model.slos[1]
    exporter.slo.update([
        evaluate_slices(with_data, [s for s in slices if s.slo_id == with_data.id], at),
        evaluate_slices(empty, [], at),
    ])  # fmt: skip
    samples = _samples(exporter)
    nan = [(name, labels) for name, labels, value in samples if math.isnan(value)]
    assert not nan, nan
    slo_series = {(n, ls[cv.L_SLO]) for n, ls, _ in samples if n.startswith("m3mon_slo_") and cv.L_SLO in ls}
    assert (cv.SLO_ATTAINMENT, with_data.name) in slo_series
    assert (cv.SLO_OBJECTIVE, empty.name) in slo_series  # the SLO is known, its windows have no data
    assert not {n for n, s in slo_series if s == empty.name} - {cv.SLO_OBJECTIVE}
    for name in MEASURED_BY_SOME:
        kinds = {ls["kind"] for n, ls, _ in samples if n == f"{name}_count"}
        empty_kinds = {ls["kind"] for n, ls, v in samples if n == f"{name}_count" and v == 0}
        assert kinds and not empty_kinds, (name, kinds, empty_kinds)
    turnaround = {ls["kind"] for n, ls, _ in samples if n == f"{cv.PROBE_TOOL_TURNAROUND}_count"}
    assert "chat" not in turnaround and "image" not in turnaround, turnaround


def test_a_window_that_loses_its_data_loses_its_series(model: Model) -> None:
    """Published with data, then evaluated without: the series goes, it does not turn NaN."""
    exporter = Exporter(model)
    results = _results(model)[:2]
    slo = model.slos[0]
    slices = [s for r in results for s in slices_from_probe(model, r) if s.slo_id == slo.id]
    at = max(r.started_at for r in results) + 60
    exporter.slo.update([evaluate_slices(slo, slices, at)])
    assert any(n == cv.SLO_BURN_RATE for n, _, _ in _samples(exporter))
    exporter.slo.update([evaluate_slices(slo, [], at + 86400 * 40)])
    after = _samples(exporter)
    assert not [n for n, _, _ in after if n in (cv.SLO_BURN_RATE, cv.SLO_ATTAINMENT, cv.SLO_BUDGET_REMAINING)]
    assert not [(n, ls) for n, ls, v in after if math.isnan(v)]
