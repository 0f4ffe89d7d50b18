"""The bottleneck verdict on simulated pools (monitor.sim.worlds): the controls and the mixed and
quiet cases of the scenario matrix, judged against each world's injected truth, not against the
rules (bench/verdict.py prints the whole matrix).

Each world is an hour of a pool in simulated time, its fault from minute 20, the verdict decided
every 15 s as the service decides it. The old rules (commit c9e3929: mean SM activity at the
latest GPU scrape, the first rule that holds, ``unknown`` below 20 probes), fed the same worlds,
failed every test here: ``unknown`` for the first 5 minutes of every pool, ``scheduler_bound`` 85 times in the busy control's hour
and ``proxy_bound`` 78 times in the outliers' one; saturated GPUs read through dcgm-exporter's
default counters ``unknown``/``queue_bound``, one pinned GPU of eight and the flat queue
``scheduler_bound``; 14 flips on dips; long prompts, long outputs, slow tools and shedding
``none``; the quiet pool ``unknown``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.sim.verdict_matrix import Judged, judge
from monitor.sim.world_scenarios import WORLDS

BY_NAME = {w.name: w for w in WORLDS}
CONTROLS = [w.name for w in WORLDS if w.after is None]
#: the mixed, quiet and counter-set cases the issue names, and one per remedy family
FAULTS = [
    "gpu-saturated-default-dcgm",
    "gpu-saturated-flat-queue",
    "gpu-saturated-dips",
    "one-gpu-of-eight-pinned",
    "memory-bound-amd-umc",
    "scheduler-stall-default-dcgm",
    "kv-pressure",
    "prefix-drop-traffic-mix",
    "slow-proxy",
    "slow-tools",
    "shedding-retried-by-gateway",
    "retry-storm-5xx",
    "two-causes-proxy-and-gpu",
    "long-prompts",
    "long-outputs",
    "slow-proxy-then-fixed",
    "one-endpoint-of-two-saturated-default-dcgm",
]
#: seconds from the onset to the right verdict (both causes, for two at once)
WITHIN: dict[str, float] = {}
#: bursts near capacity read through profiling counters, dcgm-exporter's default set and a GPU
#: exporter scraped once a minute: capacity while the bursts queue, none once a lone burst is
#: 5 minutes gone
#: (the last: another seed, whose first burst queues between two of the minute's GPU samples)
BURSTS = [("bursty-arrivals", 1), ("bursty-default-dcgm", 1), ("bursty-gpu-every-minute", 1),
          ("bursty-gpu-every-minute", 4)]  # fmt: skip


@pytest.fixture(scope="module")
def judged() -> dict[str, Judged]:
    out = {name: judge(BY_NAME[name]) for name in [*CONTROLS, *FAULTS]}
    return out | {f"{n}/{seed}": judge(replace(BY_NAME[n], seed=seed)) for n, seed in BURSTS}


@pytest.mark.parametrize("name", CONTROLS)
def test_a_control_reads_the_same_all_hour(judged: dict[str, Judged], name: str) -> None:
    r = judged[name]
    wrong = [(t, v.reason) for t, v in r.verdicts if v.verdict != r.control]
    assert not wrong, wrong[:3]
    assert r.flips == 0


@pytest.mark.parametrize("name", FAULTS)
def test_the_injected_cause_is_named_in_time_and_holds(judged: dict[str, Judged], name: str) -> None:
    r = judged[name]
    assert r.false_before == 0, [v.reason for v in r.before if v.verdict != "none"][:2]
    late = [(t, v.verdict, v.reason) for t, v in r.after if t > r.world.onset + 300]
    assert r.time_to_verdict is not None, late[-1]
    assert r.time_to_verdict <= WITHIN.get(name, 120.0), (r.time_to_verdict, late[:1])
    assert r.wrong_after == 0


@pytest.mark.parametrize("name", [f"{n}/{seed}" for n, seed in BURSTS])
def test_bursts_read_capacity_and_hold(judged: dict[str, Judged], name: str) -> None:
    """Load in 2-minute bursts to 90 % of capacity queues at some bursts: the verdict says
    capacity (GPU- or queue-bound) or nothing, never the scheduler, and holds between the bursts
    of one episode rather than follow each burst in and out (at most 8 changes in the hour: in,
    out after a lone burst, in again when the queue recurs)."""
    r = judged[name]
    assert "scheduler_bound" not in r.counts() and r.false_before == 0 and r.wrong_after == 0
    assert r.flips <= 8, [(t, v.verdict) for t, v in r.verdicts if t >= r.world.onset][:40:4]


def test_a_fixed_cause_clears_within_the_recent_window(judged: dict[str, Judged]) -> None:
    """A proxy fixed at minute 30: the verdict is back to none within the 5-minute recent window
    (and a probe interval), and stays there."""
    r = judged["slow-proxy-then-fixed"]
    assert r.time_to_clear is not None and r.time_to_clear <= 300 + 30, r.time_to_clear


def test_the_remedy_never_raises_the_batch_on_busy_gpus(judged: dict[str, Judged]) -> None:
    """Saturated GPUs, whatever the counter set, never read scheduler-bound once the fault holds."""
    for name in (
        "gpu-saturated-default-dcgm",
        "gpu-saturated-dips",
        "one-gpu-of-eight-pinned",
        "memory-bound-amd-umc",
        "one-endpoint-of-two-saturated-default-dcgm",
    ):
        assert "scheduler_bound" not in judged[name].counts(), name


def test_unreadable_gpus_never_read_as_room() -> None:
    """A memory-bound pool whose exporter shows only SM activity: neither room nor saturation can
    be claimed, so the queue reads queue-bound, never scheduler-bound ("raise max-num-seqs")."""
    r = judge(BY_NAME["memory-bound-sm-only"])
    assert "scheduler_bound" not in r.counts() and r.false_before == 0
    assert r.time_to_verdict is not None and r.time_to_verdict <= 120.0 and r.wrong_after == 0


def test_a_memory_bound_pool_is_told_what_helps_memory(judged: dict[str, Judged]) -> None:
    """SMs at half, the memory interface at 95 %: GPU-bound, and the reason says memory-bound decode
    and its remedies (not more compute, not a larger batch)."""
    _, last = judged["memory-bound-amd-umc"].after[-1]
    assert last.verdict == "gpu_bound" and "memory-bandwidth bound" in last.reason
    assert "FP8 KV cache" in last.reason


def test_two_causes_are_both_named_by_their_seconds(judged: dict[str, Judged]) -> None:
    r = judged["two-causes-proxy-and-gpu"]
    _, last = r.after[-1]
    named = [c.verdict for c in last.causes]
    assert named[:2] == ["gpu_bound", "proxy_bound"], last.reason
    assert last.causes[0].seconds >= last.causes[1].seconds


def test_a_traffic_change_is_not_called_cache_pressure(judged: dict[str, Judged]) -> None:
    r = judged["prefix-drop-traffic-mix"]
    assert set(r.counts()) == {"none"}
    # while the window before the change is the baseline (the 5 minutes after it, and 5 more)
    soon = [v for t, v in r.after if t <= r.world.onset + 300]
    assert "not cache pressure" in soon[-1].reason and "the traffic changed" in soon[-1].reason


def test_a_quiet_pool_says_what_it_lacks(judged: dict[str, Judged]) -> None:
    _, last = judged["very-low-traffic"].verdicts[-1]
    assert last.verdict == "insufficient_evidence"
    assert "20 needed" in last.reason and "server's histograms" in last.reason


@pytest.mark.parametrize("name", ["healthy-busy", "gpu-saturated-dips", "kv-pressure", "slow-proxy"])
def test_the_verdict_holds_off_the_scrape_grid(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service assesses on its own 15 s grid, not the scrapes': evaluated 7 s after each
    scrape, a control still reads the same all hour and a fault is named and holds."""
    import monitor.sim.verdict_matrix as vm

    monkeypatch.setattr(vm, "START", vm.START + 7.0)
    r = judge(BY_NAME[name])
    assert r.false_before == 0 and r.wrong_after == 0
    if r.world.after is None:
        assert r.flips == 0
    else:
        assert r.time_to_verdict is not None and r.time_to_verdict <= 120.0
