"""Are the class's GPUs saturated? Read per GPU over the recent window, from whatever counters the
cluster's exporter has.

Each GPU sample is **busy** when any activity counter it reports is at or above its threshold
(:data:`BUSY_AT`): SM activity (dcgm-exporter's profiling set, AMD's profiler), graphics-engine
activity and GPU utilisation (dcgm-exporter's *default* set: most clusters), tensor-pipe
activity, **memory bandwidth** (DRAM activity, AMD's UMC activity, or NVML's memory-copy
utilisation), power draw against the power limit, or a power/thermal clock-event (throttle)
reason. LLM decode reads every weight and the whole KV cache each step, so a decode-heavy pool
(long contexts, MoE) saturates its memory bandwidth with the SMs half idle: SM activity alone
would read "room" and send the operator to raise the batch, the wrong direction.
A GPU is busy over the window when at least a third of its samples are (a reading that dips for
a few seconds does not flip it), or when its median activity is near its threshold; the pool is
**saturated** when its hottest GPU is busy — with tensor parallelism every step waits for the
slowest rank, so one pinned GPU of eight gates the whole group and a mean over the eight would
hide it. GPUs are keyed by host and index, so two hosts' GPU 0 are two GPUs.

The pool has **room** when every GPU read is below every threshold at most samples. Utilisation
and graphics-engine activity count the time *any* kernel runs, so they cannot show room inside
a running kernel: with only those counters a busy reading says "busy", never "saturated SMs",
and the evidence says which counter spoke.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from monitor.bottleneck.inputs import GpuPoint

#: Activity thresholds (ratios 0..1), most specific counter first.
BUSY_AT: dict[str, float] = {
    "sm_active": 0.85,
    "gr_engine_active": 0.90,
    "util": 0.95,
    "tensor_active": 0.85,
}
#: Memory-bandwidth thresholds (ratios 0..1). ``memory_active`` is DCGM_FI_PROF_DRAM_ACTIVE, "Ratio of
#: cycles the device memory interface is active sending or receiving data" (dcgm-exporter
#: etc/default-counters.csv, d5e5f51: in the default set), or AMD's gpu_umc_activity ("Memory engine
#: usage in Percentage"). DRAM cannot be active every cycle (refresh, read/write turnarounds), so a
#: sustained 80 % is the interface at its practical peak. ``memory_copy_util`` is DCGM_FI_DEV_MEM_COPY_UTIL
#: ("Memory utilization (in %)", NVML's share of the sample period in which device memory was read
#: or written): a time share like GPU_UTIL, so it is read only without DRAM activity and, like
#: utilisation, says "busy", never "saturated" on its own (:attr:`GpuWindow.fine`).
MEMORY_BUSY_AT: dict[str, float] = {"memory_active": 0.80, "memory_copy_util": 0.80}
#: Power draw at this share of the power limit is busy (a compute-bound GPU runs at its cap).
POWER_BUSY = 0.90
#: DCGM clock-event reasons that mean the GPU is held back by power or heat (dcgm_fields.h:
#: SW power cap 0x4, HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80).
THROTTLE_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
#: Counters that measure the SMs themselves (utilisation and graphics-engine activity count the time
#: any kernel runs: a small decode batch keeps them at 100 %).
FINE = ("sm_active", "tensor_active")
#: Busy reasons that measure a resource at its limit (the SMs, the memory interface, the power cap).
SATURATING = (*FINE, "memory_active", "power", "throttle")
#: A GPU has room only below its threshold less this margin (between the two: near saturation).
ROOM_MARGIN = 0.10
#: A GPU is busy over the window when at least this share of its samples is: a third of its time
#: at saturation is saturation, and a reading that dips for a few seconds in every twenty (a
#: fifth of the samples) cannot bring a busy GPU below it.
MAJORITY = 1 / 3
#: A GPU whose latest sample is older than this many of its own sample gaps (and at least
#: STALE_FLOOR seconds) is not read: an exporter that stopped answering leaves samples from before
#: its failure, and "room" from minutes ago is no room now.
STALE_GAPS, STALE_FLOOR = 3, 45.0
COUNTER_NAMES = {
    "sm_active": "SM active",
    "gr_engine_active": "graphics engine active",
    "util": "GPU utilisation",
    "tensor_active": "tensor active",
    "power": "power/limit",
    "memory_active": "memory bandwidth (DRAM active)",
    "memory_copy_util": "memory-copy utilisation",
    "throttle": "clock throttling (power/thermal)",
}
MEMORY = ("memory_active", "memory_copy_util")


def _activity(values: dict[str, float]) -> tuple[str, float] | None:
    """The most specific activity counter a sample has, and its value."""
    for name in BUSY_AT:
        if name in values:
            return name, values[name]
    return None


def _memory(values: dict[str, float]) -> tuple[str, float] | None:
    """The memory-bandwidth counter a sample has (DRAM activity before memory-copy utilisation)."""
    name = next((n for n in MEMORY if n in values), None)
    return None if name is None else (name, values[name])


def busy_because(values: dict[str, float]) -> str | None:
    """Why one GPU sample is busy (the counter at or above its threshold), or None. Only the most
    specific activity counters the sample has are read: with SM or tensor activity present a
    utilisation of 100 % (a kernel running, however small) says nothing more. The memory interface
    is read next, before utilisation and graphics-engine activity (which say only that a kernel
    ran): a decode-bound pool is busy by its memory bandwidth whatever its SMs read."""
    fine = [n for n in FINE if n in values]
    for name in fine:
        if values[name] >= BUSY_AT[name]:
            return name
    memory = _memory(values)
    if memory is not None and memory[1] >= MEMORY_BUSY_AT[memory[0]]:
        return memory[0]
    coarse = [] if fine else [n for n in ("gr_engine_active", "util") if n in values][:1]
    for name in coarse:
        if values[name] >= BUSY_AT[name]:
            return name
    power, limit = values.get("power_watts"), values.get("power_limit_watts")
    if power is not None and limit and power / limit >= POWER_BUSY:
        return "power"
    reasons = values.get("clock_event_reasons")
    if reasons is not None and int(reasons) & THROTTLE_BITS:
        return "throttle"
    return None


@dataclass(frozen=True)
class DeviceWindow:
    device: str
    uuid: str | None
    samples: int
    busy_share: float  # share of its samples that were busy
    activity: float | None  # median of its most specific activity counter
    counter: str | None  # which counter that is
    because: str | None  # the counter that made most of its busy samples busy
    busy_now: bool = False  # its latest sample was busy
    memory: float | None = None  # median of its memory-bandwidth counter (None: not reported)
    #: its latest sample shows idle time: the memory interface, or the time any kernel runs
    #: (utilisation, graphics engine), below its threshold. SM activity alone cannot: memory-bound
    #: decode leaves the SMs half idle; power alone cannot either.
    idle_seen: bool = True


@dataclass(frozen=True)
class GpuWindow:
    """The class's GPUs over the recent window."""

    devices: tuple[DeviceWindow, ...]
    stale: tuple[str, ...] = ()  # GPUs whose latest sample is too old to read (STALE_GAPS)

    @property
    def read(self) -> bool:
        return bool(self.devices)

    @property
    def hottest(self) -> DeviceWindow | None:
        return max(self.devices, key=lambda d: (d.busy_share, d.activity or 0.0), default=None)

    @property
    def saturated(self) -> bool:
        """The hottest GPU was busy at most of its samples, or its median activity is within
        :data:`ROOM_MARGIN` of its threshold (near saturation: a pool hovering at the threshold
        reads one way, not both in turn)."""
        h = self.hottest
        if h is None:
            return False
        near = (
            h.activity is not None and h.counter in BUSY_AT and h.activity >= BUSY_AT[h.counter] - ROOM_MARGIN
        )
        return h.busy_share >= MAJORITY or near

    @property
    def fine(self) -> bool:
        """The reading can tell saturated SMs from kernels merely running: an SM or tensor counter
        was read, or the busy GPU was held at its power limit or throttled."""
        h = self.hottest
        if h is None:
            return False
        return h.counter in FINE or h.because in SATURATING

    @property
    def memory_bound(self) -> bool:
        """The hottest GPU is busy by its memory interface (decode reading weights and KV cache)."""
        h = self.hottest
        return self.saturated and h is not None and h.because in MEMORY

    @property
    def room(self) -> bool:
        """A reading says every GPU had room over the window and still has at its latest sample
        (a GPU that just became busy is not yet saturated, and has no room either)."""
        return (
            self.read
            and not self.stale
            and not self.saturated
            and not any(d.busy_now for d in self.devices)
            and all(d.idle_seen for d in self.devices)
        )

    @property
    def unproven(self) -> str | None:
        """Why a reading that is not saturated still cannot claim room (None: it can, or it is
        saturated)."""
        if not self.read or self.saturated:
            return None
        if self.stale:
            return f"GPU exporter stale for {len(self.stale)} GPU(s): no sample in the last scrapes"
        if not all(d.idle_seen for d in self.devices):
            return "no counter that shows idle time (memory bandwidth, utilisation) was read"
        return None

    def describe(self) -> str:
        h = self.hottest
        if h is None:
            return "no GPU reading"
        counter = COUNTER_NAMES.get(h.because or h.counter or "", h.because or h.counter or "activity")
        level = f" {h.activity:.0%}" if h.activity is not None and h.because in (None, h.counter) else ""
        others = [d.activity for d in self.devices if d is not h and d.activity is not None]
        rest = f"; the other {len(others)} median {median(others):.0%}" if others else ""
        state = (
            "has room" if not self.saturated else "busy" if h.busy_share >= MAJORITY else "near saturation"
        )
        if h.because in MEMORY and h.memory is not None:
            sm = (
                f", {COUNTER_NAMES.get(h.counter or '', 'activity')} {h.activity:.0%}"
                if h.activity is not None
                else ""
            )
            level = f" {h.memory:.0%}{sm}: memory-bandwidth bound"
        return (f"hottest GPU {h.device} {state} ({counter}{level}, busy at "
                f"{h.busy_share:.0%} of {h.samples} samples{rest})")  # fmt: skip


def _idle_seen(values: dict[str, float]) -> bool:
    memory = _memory(values)
    if memory is not None and memory[1] < MEMORY_BUSY_AT[memory[0]]:
        return True
    return any(values[n] < BUSY_AT[n] for n in ("gr_engine_active", "util") if n in values)


def _stale(rows: Sequence[GpuPoint], end: float) -> bool:
    """``rows``: every sample of the GPU read (not only the window's: an exporter scraped every
    minute has one sample in a two-minute window, and its gap is still known)."""
    times = [r.time for r in rows if r.time <= end]
    gaps = sorted(b - a for a, b in itertools.pairwise(times) if b > a)
    gap = gaps[len(gaps) // 2] if gaps else 0.0
    return end - times[-1] > max(STALE_FLOOR, STALE_GAPS * gap)


def gpu_window(points: Sequence[GpuPoint], start: float, end: float, live: bool = True) -> GpuWindow:
    """Each GPU's samples in (start, end] reduced to a :class:`DeviceWindow` (``live``: an instant's
    state window, where a GPU whose samples stopped is counted stale, not read; a report's period
    reads every sample it has)."""
    by_device: dict[str, list[GpuPoint]] = defaultdict(list)
    every: dict[str, list[GpuPoint]] = defaultdict(list)
    for p in points:
        every[p.device].append(p)
        if start < p.time <= end:
            by_device[p.device].append(p)
    out, stale = [], []
    for device, unordered in sorted(by_device.items()):
        rows = sorted(unordered, key=lambda r: r.time)
        if live and _stale(sorted(every[device], key=lambda r: r.time), end):
            stale.append(device)
            continue
        reasons = [busy_because(dict(r.values)) for r in rows]
        busy = [r for r in reasons if r is not None]
        acts = [a for r in rows if (a := _activity(dict(r.values))) is not None]
        mems = [m[1] for r in rows if (m := _memory(dict(r.values))) is not None]
        because = max(set(busy), key=busy.count) if busy else None
        out.append(
            DeviceWindow(
                device=device,
                uuid=rows[-1].uuid,
                samples=len(rows),
                busy_share=len(busy) / len(rows),
                activity=median([v for _, v in acts]) if acts else None,
                counter=acts[-1][0] if acts else None,
                because=because,
                busy_now=reasons[-1] is not None,
                memory=median(mems) if mems else None,
                idle_seen=_idle_seen(dict(rows[-1].values)),
            )
        )
    return GpuWindow(tuple(out), tuple(stale))
