"""The simulator's dcgm-exporter surface (``--dcgm-gpus``) and its GPU faults.

Faithfulness is checked against the held page composed from dcgm-exporter's own default-counters
file (tests/fixtures/gpu/SOURCES.md): the same families, TYPE and HELP, the same label layout.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from types import SimpleNamespace

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from monitor.scrape.gpu import read_gpu_text
from monitor.sim.config import SimConfig
from monitor.sim.engine import Engine
from monitor.sim.faults import Faults
from monitor.sim.harness import SimHandle, running_simulator
from tests.sim.conftest import FAST, HTTP, MODEL

HELD = (
    Path(__file__).resolve().parent.parent
    / "fixtures"
    / "gpu"
    / "dcgm-exporter-4.5.3-4.8.2-h200x2.metrics.txt"
)


def types_and_helps(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """Family -> TYPE and family -> HELP, read by prometheus_client (not the monitor's parser: the
    simulator's page must not be checked through the monitor's view of it)."""
    families = list(text_string_to_metric_families(text))
    return {f.name: f.type for f in families}, {f.name: f.documentation for f in families}


def label_names(text: str, family: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(family + "{"))
    return re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', line.split("{", 1)[1])


def test_surface_matches_the_held_default_counters_page() -> None:
    with running_simulator(dcgm_gpus=8, **FAST) as sim:
        text = HTTP.get(f"{sim.base_url}/dcgm/metrics").text
        assert "vllm:" not in text
    held = HELD.read_text(encoding="utf-8")
    (types, helps), (held_types, held_helps) = types_and_helps(text), types_and_helps(held)
    assert types == held_types and helps == held_helps and len(types) >= 20
    for family in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_XID_ERRORS"):
        assert label_names(text, family) == label_names(held, family)
    r = read_gpu_text(text, 1.0)
    assert list(r.devices) == [str(i) for i in range(8)] and r.driver_version == "570.124.06"
    idle = r.devices["3"].gauges
    assert idle["util"] == 0 and idle["sm_active"] == 0 and idle["xid"] == 0
    assert idle["memory_used_bytes"] == round(0.9 * 143771) * 2**20  # gpu_memory_utilization x total


def test_no_surface_without_the_flag(sim: SimHandle) -> None:
    assert HTTP.get(f"{sim.base_url}/dcgm/metrics").status_code == 404


def test_utilisation_follows_running_requests() -> None:
    with running_simulator(dcgm_gpus=2, decode_itl=0.02, jitter=0.0, max_num_seqs=4) as sim:
        client = openai.OpenAI(base_url=f"{sim.base_url}/v1", api_key="x", max_retries=0, timeout=30)
        started = threading.Event()

        def generate() -> None:
            stream = client.chat.completions.create(model=MODEL, stream=True, max_tokens=200,
                messages=[{"role": "user", "content": "Tell a story."}], extra_body={"ignore_eos": True})  # fmt: skip
            for _ in stream:
                started.set()

        workers = [threading.Thread(target=generate) for _ in range(2)]
        for w in workers:
            w.start()
        assert started.wait(20)
        busy = read_gpu_text(HTTP.get(f"{sim.base_url}/dcgm/metrics").text, 1.0).devices["0"].gauges
        for w in workers:
            w.join(30)
        idle = read_gpu_text(HTTP.get(f"{sim.base_url}/dcgm/metrics").text, 2.0).devices["0"].gauges
        client.close()
    # docs/simulator.md: x = max(running / max_num_seqs, kv use) >= 1/4 with one of 4 slots busy;
    # GPU_UTIL is a whole percent (round(100 * (0.5 + 0.5 x)): 62.5 may round to 62)
    assert busy["sm_active"] >= 0.2 + 0.75 * 0.25 - 1e-6 and busy["util"] >= 0.62 - 1e-6
    assert busy["tensor_active"] == pytest.approx(busy["sm_active"] / 2, abs=1e-6)
    assert idle["sm_active"] == 0 and idle["util"] == 0


def test_gpu_faults() -> None:
    with running_simulator(dcgm_gpus=2, **FAST) as sim:
        sim.set_faults(gpu_xid=79, gpu_memory_full=True, gpu_saturated=True)
        text = HTTP.get(f"{sim.base_url}/dcgm/metrics").text
    assert 'err_code="79",err_msg="GPU has fallen off the bus"} 79' in text
    r = read_gpu_text(text, 1.0)
    g0, g1 = r.devices["0"].gauges, r.devices["1"].gauges
    assert g0["xid"] == 79 and g1["xid"] == 0
    assert g0["memory_free_bytes"] == 0 and g1["memory_free_bytes"] == 0
    assert g0["util"] == 1.0 and g0["sm_active"] == 0.98 and g0["tensor_active"] == 0.85


def test_saturated_gpus_slow_every_engine_step() -> None:
    cfg = SimConfig(jitter=0.0)
    healthy, saturated = Faults(), Faults(gpu_saturated=True)
    engine = Engine(cfg, lambda: healthy, lambda: None, lambda _r: None)  # type: ignore[arg-type,return-value]
    work = [SimpleNamespace(decode=True, prefill=512)]
    plain = engine._step_time(work, healthy)  # type: ignore[arg-type]
    assert plain == pytest.approx(cfg.decode_itl * (1 - cfg.batch_slowdown / (cfg.max_num_seqs - 1))
                                  + cfg.prefill_overhead + 512 / cfg.prefill_tps)  # fmt: skip
    assert engine._step_time(work, saturated) == pytest.approx(2 * plain)  # type: ignore[arg-type]


def test_bad_fault_values_are_rejected() -> None:
    with running_simulator(dcgm_gpus=1, **FAST) as sim:
        bad = HTTP.post(f"{sim.base_url}/sim/faults", json={"gpu_xid": 0})
        assert bad.status_code == 400 and "gpu_xid" in bad.text
