"""The LLM SLIs against the real simulator: a stalled stream and a broken prefix cache.

One simulator for the module (the reasoning probe streams 160+ tokens at 2 ms, speculative decoding on, prefill slow
enough that a cache hit shows). Each probe's SLI events come from the real store path
(:func:`monitor.slo.slices.slices_from_probe`); expectations are from docs/slo-events.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from monitor.model import Model, load_model
from monitor.probes.result import ProbeResult
from monitor.probes.runner import plan_round, run_probe
from monitor.sim.harness import SimHandle, running_simulator
from monitor.slo.slices import slices_from_probe
from tests.probes.conftest import write_config

pytestmark = pytest.mark.timeout(90)

SETTINGS = {"decode_itl": 0.002, "jitter": 0.0, "max_model_len": 4096, "prefill_tps": 20_000.0,
            "reasoning_tokens": 160, "answer_tokens": (6, 10), "enable_per_request_metrics": True}  # fmt: skip
SLOS = """\
      - {name: stall, sli: stall, threshold: 1s, objective: 99, source: probes}
      - {name: tpot, sli: tpot, threshold: 50ms, objective: 99, source: probes}
      - {name: warm, sli: ttft_warm, threshold: 75ms, objective: 99, source: probes}
      - {name: goodput, sli: goodput, objective: 90, source: probes}
"""


@pytest.fixture(scope="module")
def sim() -> Iterator[SimHandle]:
    with running_simulator(**SETTINGS) as handle:  # type: ignore[arg-type]
        yield handle


@pytest.fixture(scope="module")
def model(sim: SimHandle, tmp_path_factory: pytest.TempPathFactory) -> Model:
    path = write_config(tmp_path_factory.mktemp("cfg") / "m3mon.yaml", sim.base_url, timeout="30s")
    text = path.read_text().replace("    slos:\n", "    slos:\n" + SLOS, 1)
    path.write_text(text)
    return load_model(path)


def probe(model: Model, kind: str) -> ProbeResult:
    (p,) = plan_round(model, kinds=[kind])

    async def go() -> ProbeResult:
        async with httpx.AsyncClient() as client:
            return await run_probe(p, client)

    return asyncio.run(go())


def events(model: Model, result: ProbeResult) -> dict[str, tuple[float, float]]:
    """(good, total) per SLO name of the run."""
    return {s.slo_id.split("/")[1]: (s.good, s.total) for s in slices_from_probe(model, result)}


def test_healthy_stream_meets_every_slo(model: Model, sim: SimHandle) -> None:
    sim.clear_faults()
    result = probe(model, "reasoning")
    assert result.ok, result.detail
    t = result.timings
    assert len(t.itl_samples) == sum(g.tokens for g in t.chunk_gaps) > 100  # k samples per k-token gap
    ev = events(model, result)
    assert ev["stall"] == (1.0, 1.0) and ev["goodput"] == (1.0, 1.0) and ev["tpot"] == (1.0, 1.0)


def test_three_second_stall_breaks_stall_not_mean_itl(model: Model, sim: SimHandle) -> None:
    sim.clear_faults()
    sim.set_faults(stream_stall=3.0)
    try:
        result = probe(model, "reasoning")
    finally:
        sim.clear_faults()
    assert result.ok, result.detail
    longest = result.timings.longest_gap
    assert longest is not None and 2.9 <= longest.seconds < 3.5
    assert longest.before >= 4 and longest.at > 0  # after the 4th chunk, mid-stream
    ev = events(model, result)
    assert ev["stall"] == (0.0, 1.0)  # the one event of this run is bad
    # the mean ITL hides it: 3 s spread over 160+ tokens is under 20 ms a token
    assert result.timings.itl_mean is not None and result.timings.itl_mean < 0.05
    assert ev["tpot"] == (1.0, 1.0)  # the mean per output token stays under 50 ms
    assert ev["goodput"] == (0.0, 1.0)  # a stalled request did not meet every objective


def test_prefix_cache_off_breaks_ttft_warm(model: Model, sim: SimHandle) -> None:
    sim.clear_faults()
    healthy = probe(model, "long_prompt")
    sim.set_faults(prefix_cache_off=True)
    try:
        broken = probe(model, "long_prompt")
    finally:
        sim.clear_faults()
    assert healthy.ok and broken.ok, (healthy.detail, broken.detail)
    assert healthy.extra["warm_cached_tokens"] > 0 and broken.extra.get("warm_cached_tokens", 0) == 0
    assert events(model, healthy)["warm"] == (1.0, 1.0)
    assert events(model, broken)["warm"] == (0.0, 1.0)
    assert broken.extra["warm_ttft"] > 0.075 >= healthy.extra["warm_ttft"]


def test_config_example_is_loadable(tmp_path: Path, sim: SimHandle) -> None:
    """``stall``/``ttft_*`` need a threshold, ``goodput`` takes none, and none come from the server."""
    from monitor.errors import ConfigError

    for bad, words in (("{name: s, sli: stall, objective: 99}", "needs a threshold"),
                       ("{name: g, sli: goodput, threshold: 1s, objective: 99}", "takes no threshold"),
                       ("{name: w, sli: ttft_warm, threshold: 1s, objective: 99, source: server}",
                        "ttft_warm can only come from probes")):  # fmt: skip
        path = write_config(tmp_path / "c.yaml", sim.base_url)
        path.write_text(path.read_text().replace("    slos:\n", f"    slos:\n      - {bad}\n", 1))
        with pytest.raises(ConfigError, match=words):
            load_model(path)
