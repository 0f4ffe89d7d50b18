"""Per-GPU and per-endpoint GPU signals from one GPU reading (cumulative) or two (an interval).

Gauges are the newer reading's values. Counters (NVLink/XGMI bytes, uncorrectable ECC errors) are
increases since the older reading, per GPU, with Prometheus' reset rule (a drop means the counter
restarted: the new value is the increase); their rates need an interval. The endpoint aggregate is
what a verdict reads: the mean and the hottest GPU of each ratio, the fullest GPU's memory share,
summed power and interconnect traffic, and which GPUs report an XID.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from monitor.scrape.gpu import GpuDevice, GpuReading

#: Per-GPU gauges a bottleneck verdict reads (stored per GPU sample, ``gpu_samples.devices``): the
#: activity counters of every counter set (DCGM's default set has ``util`` and ``gr_engine_active``,
#: its profiling set ``sm_active`` and ``tensor_active``; AMD's ``util`` and the profiler's), power
#: against its limit and the clock-event (throttle) reasons.
VERDICT_FIELDS = ("util", "gr_engine_active", "sm_active", "tensor_active", "memory_active",
                  "memory_copy_util", "power_watts", "power_limit_watts", "clock_event_reasons")  # fmt: skip

#: Ratio fields averaged over GPUs (and whose hottest GPU is reported too).
RATIOS = ("util", "gr_engine_active", "sm_active", "tensor_active", "memory_active", "memory_copy_util")


@dataclass(frozen=True)
class GpuDeviceSignals:
    gpu: str
    uuid: str | None
    gauges: dict[str, float]
    increases: dict[str, float]  # counter increases over the interval (totals when cumulative)
    rates: dict[str, float]  # per second (empty when cumulative)
    host: str | None = None

    @property
    def memory_used_ratio(self) -> float | None:
        used, free = self.gauges.get("memory_used_bytes"), self.gauges.get("memory_free_bytes")
        if used is None or free is None or used + free <= 0:
            return None
        return used / (used + free)

    @property
    def interconnect_bytes_per_second(self) -> float | None:
        if "interconnect_bytes_per_second" in self.gauges:
            return self.gauges["interconnect_bytes_per_second"]
        return self.rates.get("interconnect_bytes")

    @property
    def xid(self) -> int | None:
        """The last XID error the GPU reported (DCGM; 0 and absent both mean none)."""
        value = self.gauges.get("xid")
        return int(value) if value else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            **{k: self.gauges.get(k) for k in RATIOS},
            "memory_used_bytes": self.gauges.get("memory_used_bytes"),
            "memory_free_bytes": self.gauges.get("memory_free_bytes"),
            "memory_used_ratio": self.memory_used_ratio,
            "power_watts": self.gauges.get("power_watts"),
            "temperature_celsius": self.gauges.get("temperature_celsius"),
            "xid": self.xid,
            "ecc_uncorrectable": self.increases.get("ecc_uncorrectable"),
            "interconnect_bytes": self.increases.get("interconnect_bytes"),
            "interconnect_bytes_per_second": self.interconnect_bytes_per_second,
        }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _total(values: list[float]) -> float | None:
    return sum(values) if values else None


@dataclass(frozen=True)
class GpuSignals:
    """The GPUs behind one endpoint, over one interval (``start`` None: one cumulative page)."""

    endpoint: str
    exporter: str
    end: float
    start: float | None
    devices: dict[str, GpuDeviceSignals]
    driver_version: str | None = None
    firmware_version: str | None = None
    model: str | None = None
    reset: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    def _values(self, get: Any) -> list[float]:
        return [v for d in self.devices.values() if (v := get(d)) is not None]

    def mean(self, name: str) -> float | None:
        return _mean(self._values(lambda d: d.gauges.get(name)))

    def hottest(self, name: str) -> float | None:
        values = self._values(lambda d: d.gauges.get(name))
        return max(values) if values else None

    @property
    def xid_gpus(self) -> dict[str, int]:
        """GPU -> last XID, for the GPUs that report one."""
        return {g: x for g, d in self.devices.items() if (x := d.xid) is not None}

    def device_readings(self) -> dict[str, dict[str, Any]]:
        """Per GPU, keyed ``host/index`` (``endpoint/index`` without a hostname label): its UUID,
        host, index and the :data:`VERDICT_FIELDS` it reported."""
        out: dict[str, dict[str, Any]] = {}
        for gpu, d in self.devices.items():
            host = d.host or self.endpoint
            key = gpu if "/" in gpu else f"{host}/{gpu}"
            values = {k: d.gauges[k] for k in VERDICT_FIELDS if k in d.gauges}
            out[key] = {"uuid": d.uuid, "host": host, "gpu": gpu, **values}
        return out

    def aggregate(self) -> dict[str, Any]:
        """The endpoint's GPU signals (stable keys, docs/collector.md "GPU pages")."""
        used = self._values(lambda d: d.memory_used_ratio)
        return {
            "gpus": len(self.devices),
            **{f"{k}_mean": self.mean(k) for k in RATIOS},
            **{f"{k}_max": self.hottest(k) for k in RATIOS},
            "memory_used_bytes": _total(self._values(lambda d: d.gauges.get("memory_used_bytes"))),
            "memory_free_bytes": _total(self._values(lambda d: d.gauges.get("memory_free_bytes"))),
            "memory_used_ratio_max": max(used) if used else None,
            "power_watts": _total(self._values(lambda d: d.gauges.get("power_watts"))),
            "temperature_celsius_max": self.hottest("temperature_celsius"),
            "interconnect_bytes_per_second": _total(self._values(lambda d: d.interconnect_bytes_per_second)),
            "ecc_uncorrectable": _total(self._values(lambda d: d.increases.get("ecc_uncorrectable"))),
            "xid_gpus": self.xid_gpus,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "exporter": self.exporter,
            "start": self.start,
            "end": self.end,
            "duration": None if self.start is None else self.end - self.start,
            "reset": self.reset,
            "model": self.model,
            "driver_version": self.driver_version,
            "firmware_version": self.firmware_version,
            "endpoint_total": self.aggregate(),
            "gpus": {g: d.to_dict() for g, d in self.devices.items()},
            "notes": list(self.notes),
        }


def _increases(new: GpuDevice, old: GpuDevice | None) -> tuple[dict[str, float], bool]:
    out, reset = {}, False
    for name, value in new.counters.items():
        prior = None if old is None else old.counters.get(name)
        if prior is None:
            out[name] = value
        elif value < prior:
            out[name], reset = value, True
        else:
            out[name] = value - prior
    return out, reset


def gpu_signals(endpoint: str, newer: GpuReading, older: GpuReading | None = None) -> GpuSignals:
    """Reduce ``newer`` (and the older reading of the same exporter, if any) to signals."""
    if older is not None and (older.exporter != newer.exporter or older.time >= newer.time):
        older = None
    duration = None if older is None else newer.time - older.time
    devices, any_reset = {}, False
    for gpu, dev in newer.devices.items():
        old = None if older is None else older.devices.get(gpu)
        increases, reset = _increases(dev, old)
        any_reset = any_reset or reset
        rates = {k: v / duration for k, v in increases.items()} if duration and old is not None else {}
        devices[gpu] = GpuDeviceSignals(gpu, dev.uuid, dev.gauges, increases, rates, dev.host)
    return GpuSignals(
        endpoint=endpoint,
        exporter=newer.exporter,
        end=newer.time,
        start=None if older is None else older.time,
        devices=devices,
        driver_version=newer.driver_version,
        firmware_version=newer.firmware_version,
        model=newer.model,
        reset=any_reset,
        notes=newer.notes,
    )
