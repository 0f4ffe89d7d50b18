"""GPU saturation as the verdict reads it, from real dcgm-exporter pages (the held 4.5.3-4.8.2 page,
tests/fixtures/gpu) edited the way other clusters' pages differ: dcgm-exporter's *default* counter
set (no ``DCGM_FI_PROF_SM_ACTIVE``), several hosts behind one exporter URL, one GPU pinned, a
reading that dips. The oracle is what the counters mean (dcgm-exporter's HELP texts): GPU_UTIL
and GR_ENGINE_ACTIVE are the time a kernel ran, SM_ACTIVE the SMs' occupancy.
"""

from __future__ import annotations

import re
from pathlib import Path

from monitor.bottleneck.gpu import GpuWindow, gpu_window
from monitor.bottleneck.inputs import GpuPoint
from monitor.scrape.gpu import read_gpu_text
from monitor.scrape.gpu_signals import gpu_signals

PAGE = (
    Path(__file__).resolve().parents[1] / "fixtures/gpu/dcgm-exporter-4.5.3-4.8.2-h200x2.metrics.txt"
).read_text()
PROFILING = ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")


def _set(page: str, family: str, value: float) -> str:
    return re.sub(rf"^({family}\{{[^}}]*\}}) \S+$", rf"\g<1> {value}", page, flags=re.M)


def _default_set(page: str) -> str:
    """The page without the profiling counters dcgm-exporter's default-counters.csv leaves out."""
    return "\n".join(line for line in page.splitlines() if not any(f in line for f in PROFILING)) + "\n"


def _points(pages: list[str], endpoint: str = "pool") -> list[GpuPoint]:
    out = []
    for k, text in enumerate(pages):
        signals = gpu_signals(endpoint, read_gpu_text(text, 1000.0 + 15 * k))
        for key, d in signals.device_readings().items():
            values = {n: float(v) for n, v in d.items() if isinstance(v, int | float) and n != "gpu"}
            out.append(GpuPoint(endpoint, signals.end, key, d["uuid"], values))
    return out


def _window(points: list[GpuPoint]) -> GpuWindow:
    """The window that ends at the latest sample (the assessment right after a scrape)."""
    return gpu_window(points, 0, max(p.time for p in points))


def test_the_default_counter_set_reads_saturation() -> None:
    busy = _set(_set(_default_set(PAGE), "DCGM_FI_DEV_GPU_UTIL", 100), "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1.0)
    w = _window(_points([busy] * 8))
    assert w.saturated and not w.room
    assert w.hottest is not None and w.hottest.because == "gr_engine_active"
    assert not w.fine  # a kernel running all the time, not SMs measured full
    idle = _set(_set(_default_set(PAGE), "DCGM_FI_DEV_GPU_UTIL", 20), "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.2)
    assert _window(_points([idle] * 8)).room


def test_sm_activity_outranks_utilisation() -> None:
    """With SM activity on the page, GPU_UTIL at 100 % (any kernel running) is not saturation."""
    page = _set(_set(PAGE, "DCGM_FI_DEV_GPU_UTIL", 100), "DCGM_FI_PROF_SM_ACTIVE", 0.4)
    page = _set(_set(page, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1.0), "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.2)
    w = _window(_points([page] * 8))
    assert w.room and w.fine


def _merged(first: str, second: str) -> str:
    """One page of two hosts (a federated or proxied exporter): each family's samples together."""
    out = []
    extra = [line for line in second.splitlines() if line and not line.startswith("#")]
    lines = first.splitlines()
    for k, line in enumerate(lines):
        out.append(line)
        family = line.split("{", 1)[0]
        ends = k + 1 == len(lines) or lines[k + 1].split("{", 1)[0] != family
        if line and not line.startswith("#") and ends:
            out += [x for x in extra if x.split("{", 1)[0] == family]
    return "\n".join(out) + "\n"


def test_two_hosts_behind_one_url_are_four_gpus_not_two() -> None:
    other = PAGE.replace('Hostname="m3-node-1"', 'Hostname="m3-node-2"').replace('UUID="GPU-', 'UUID="GPU-2')
    page = _merged(_set(PAGE, "DCGM_FI_PROF_SM_ACTIVE", 0.3), _set(other, "DCGM_FI_PROF_SM_ACTIVE", 0.98))
    reading = read_gpu_text(page, 1000.0)
    assert sorted(reading.devices) == ["m3-node-1/0", "m3-node-1/1", "m3-node-2/0", "m3-node-2/1"]
    w = _window(_points([page] * 4))
    assert w.saturated and w.hottest is not None and w.hottest.device.startswith("m3-node-2/")


def _synthetic(levels: list[list[float]]) -> list[GpuPoint]:
    """GPU points from per-sample, per-GPU SM activity."""
    return [GpuPoint("pool", 1000.0 + 15 * k, f"node-a/{g}", None, {"sm_active": v})
            for k, row in enumerate(levels) for g, v in enumerate(row)]  # fmt: skip


def test_one_pinned_gpu_of_eight_saturates_the_group() -> None:
    w = _window(_synthetic([[0.3, 0.3, 0.3, 0.98, 0.3, 0.3, 0.3, 0.3]] * 8))
    assert w.saturated and w.hottest is not None and w.hottest.device == "node-a/3"
    assert "the other 7 median 30%" in w.describe()


def test_a_reading_that_dips_does_not_flip() -> None:
    """SM at 95 % with a 40 % dip in one sample of five: busy at every window end."""
    levels = [[0.4 if k % 5 == 2 else 0.95] * 8 for k in range(40)]
    points = _synthetic(levels)
    states = {gpu_window(points, 1000.0 + 15 * (k - 8), 1000.0 + 15 * k).saturated for k in range(8, 40)}
    assert states == {True}


def test_power_at_its_limit_is_saturation() -> None:
    page = _set(_default_set(PAGE), "DCGM_FI_DEV_GPU_UTIL", 60)
    page = _set(page, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.6)
    points = [GpuPoint(p.endpoint, p.time, p.device, p.uuid, {**p.values, "power_watts": 690.0,
                       "power_limit_watts": 700.0}) for p in _points([page] * 8)]  # fmt: skip
    w = _window(points)
    assert w.saturated and w.fine and w.hottest is not None and w.hottest.because == "power"


AMD_PAGE = (
    Path(__file__).resolve().parents[1] / "fixtures/gpu/amd-dme-afd0fe8-mi300x-x2.metrics.txt"
).read_text()
DCP = ("DCGM_FI_PROF_",)


def test_memory_bandwidth_saturation_is_busy_with_the_sms_half_idle() -> None:
    """Memory-bound decode: DRAM active 95 % while SM activity reads 50 % is no room, on dcgm-exporter
    pages (DRAM_ACTIVE is in its default set) and on AMD's (UMC activity with the profiler's SM)."""
    page = _set(_set(PAGE, "DCGM_FI_PROF_SM_ACTIVE", 0.5), "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.25)
    page = _set(_set(page, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.6), "DCGM_FI_PROF_DRAM_ACTIVE", 0.95)
    w = _window(_points([page] * 8))
    assert w.saturated and not w.room and w.memory_bound and w.fine
    assert "memory-bandwidth bound" in w.describe() and "SM active 50%" in w.describe()
    amd = _set(_set(AMD_PAGE, "gpu_prof_sm_active", 50), "gpu_umc_activity", 95)
    a = _window(_points([amd] * 8))
    assert a.saturated and not a.room and a.memory_bound
    # the held pages as they are (DRAM 0.55-0.56, UMC 41-44 %): no memory saturation
    assert not _window(_points([AMD_PAGE] * 8)).memory_bound
    assert not _window(_points([_set(PAGE, "DCGM_FI_PROF_SM_ACTIVE", 0.5)] * 8)).memory_bound


def test_memory_copy_utilisation_without_profiling_says_busy_not_saturated() -> None:
    """Without the DCP rows (profiling unavailable), NVML's MEM_COPY_UTIL at 95 % names the memory
    interface, and like GPU_UTIL it is a time share: busy, not a measured saturation."""
    nvml = "\n".join(line for line in PAGE.splitlines() if not any(f in line for f in DCP)) + "\n"
    page = _set(_set(nvml, "DCGM_FI_DEV_GPU_UTIL", 100), "DCGM_FI_DEV_MEM_COPY_UTIL", 95)
    w = _window(_points([page] * 8))
    assert w.saturated and w.memory_bound and not w.fine
    assert w.hottest is not None and w.hottest.because == "memory_copy_util"
    quiet = _set(_set(nvml, "DCGM_FI_DEV_GPU_UTIL", 30), "DCGM_FI_DEV_MEM_COPY_UTIL", 20)
    assert _window(_points([quiet] * 8)).room


def test_a_stopped_exporter_is_not_room() -> None:
    """Idle pages, then the exporter stops answering (the monitor's own fault): a minute later the
    samples from before are stale, and neither room nor saturation is claimed from them."""
    idle = _set(_set(PAGE, "DCGM_FI_PROF_SM_ACTIVE", 0.2), "DCGM_FI_PROF_DRAM_ACTIVE", 0.2)
    points = _points([idle] * 4)  # 1000 .. 1045 s
    assert gpu_window(points, 925.0, 1050.0).room
    later = gpu_window(points, 975.0, 1110.0)
    assert not later.room and not later.read and later.stale == ("m3-node-1/0", "m3-node-1/1")


def test_only_sm_or_only_power_cannot_show_room() -> None:
    """SM activity at 50 % without the memory interface, or power at 60 % of its limit alone: a
    memory-bound GPU reads both ways, so no room is claimed (and no saturation)."""
    sm_only = "\n".join(line for line in PAGE.splitlines() if "DRAM_ACTIVE" not in line and
                        "MEM_COPY_UTIL" not in line) + "\n"  # fmt: skip
    sm_only = _set(_set(sm_only, "DCGM_FI_PROF_SM_ACTIVE", 0.5), "DCGM_FI_DEV_GPU_UTIL", 100)
    w = _window(_points([sm_only] * 8))
    assert not w.saturated and not w.room and w.unproven is not None
    power = [GpuPoint("pool", 1000.0 + 15 * k, f"node-a/{g}", None, {"power_watts": 420.0, "power_limit_watts": 700.0})
             for k in range(8) for g in range(2)]  # fmt: skip
    p = _window(power)
    assert p.read and not p.saturated and not p.room
