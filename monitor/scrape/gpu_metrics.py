"""The monitor's GPU gauges: what each endpoint's GPU exporter said at the last scrape, per GPU.

Labels are bounded: ``endpoint`` and ``gpu`` (the exporter's GPU index; at most the GPUs of the
endpoint's nodes). A GPU that disappears from the page, or an endpoint whose GPU scrape fails,
loses its series (no stale values). Names in :mod:`monitor.conventions`; the raw exporter series
are never re-exported (Prometheus scrapes the exporters itself, see docs/generate.md).
"""

from __future__ import annotations

from contextlib import suppress

from prometheus_client import CollectorRegistry, Gauge

from monitor.conventions import (
    GPU_INTERCONNECT,
    GPU_MEMORY_FREE,
    GPU_MEMORY_USED,
    GPU_POWER,
    GPU_SCRAPE_SUCCESS,
    GPU_SM_ACTIVE,
    GPU_TENSOR_ACTIVE,
    GPU_UTILIZATION,
    GPU_XID,
    KV_EVICTION_BEFORE_REUSE,
    L_ENDPOINT,
    L_GPU,
)
from monitor.scrape.gpu_signals import GpuDeviceSignals, GpuSignals

_PER_GPU: tuple[tuple[str, str, str], ...] = (
    (GPU_UTILIZATION, "util", "GPU utilisation 0..1 (DCGM_FI_DEV_GPU_UTIL / AMD gpu_gfx_activity)."),
    (GPU_SM_ACTIVE, "sm_active", "SM activity 0..1 (DCGM_FI_PROF_SM_ACTIVE / AMD gpu_prof_sm_active)."),
    (GPU_TENSOR_ACTIVE, "tensor_active",
     "Tensor pipe activity 0..1 (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE / AMD gpu_prof_tensor_active_percent)."),
    (GPU_MEMORY_USED, "memory_used_bytes", "GPU memory used in bytes (DCGM_FI_DEV_FB_USED / gpu_used_vram)."),
    (GPU_MEMORY_FREE, "memory_free_bytes", "GPU memory free in bytes (DCGM_FI_DEV_FB_FREE / gpu_free_vram)."),
    (GPU_POWER, "power_watts", "GPU power draw in watts."),
)  # fmt: skip


class GpuMetrics:
    """Per-GPU gauges of every endpoint with a GPU exporter, registered on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = [L_ENDPOINT, L_GPU]
        self.success = Gauge(GPU_SCRAPE_SUCCESS, "1 if the last scrape of the endpoint's GPU exporter "
                             "succeeded, else 0.", [L_ENDPOINT], registry=registry)  # fmt: skip
        self.gauges = {f: Gauge(name, text, labels, registry=registry) for name, f, text in _PER_GPU}
        self.xid = Gauge(GPU_XID, "Value of the last XID error the GPU reported (DCGM_FI_DEV_XID_ERRORS; "
                         "0: none).", labels, registry=registry)  # fmt: skip
        self.interconnect = Gauge(GPU_INTERCONNECT, "NVLink/XGMI traffic of the GPU in bytes per second "
                                  "over the last scrape interval.", labels, registry=registry)  # fmt: skip
        self.eviction_before_reuse = Gauge(
            KV_EVICTION_BEFORE_REUSE,
            "Share of the interval's evicted KV blocks idle no longer than the median reuse gap "
            "(vllm:kv_block_* histograms; docs/collector.md).",
            [L_ENDPOINT],
            registry=registry,
        )
        self._shown: dict[str, set[str]] = {}

    def _all(self) -> list[Gauge]:
        return [*self.gauges.values(), self.xid, self.interconnect]

    def forget(self, endpoint: str) -> None:
        """Drop the endpoint's per-GPU series (a failed scrape, or the endpoint left the config)."""
        for gpu in self._shown.pop(endpoint, set()):
            for gauge in self._all():
                with suppress(KeyError):
                    gauge.remove(endpoint, gpu)

    def failed(self, endpoint: str) -> None:
        self.success.labels(endpoint).set(0)
        self.forget(endpoint)

    def update(self, signals: GpuSignals) -> None:
        """Publish one GPU scrape's per-GPU values."""
        endpoint = signals.endpoint
        self.forget(endpoint)
        self.success.labels(endpoint).set(1)
        for gpu, dev in signals.devices.items():
            self._publish(endpoint, gpu, dev)
        self._shown[endpoint] = set(signals.devices)

    def _publish(self, endpoint: str, gpu: str, dev: GpuDeviceSignals) -> None:
        for fname, gauge in self.gauges.items():
            if (value := dev.gauges.get(fname)) is not None:
                gauge.labels(endpoint, gpu).set(value)
        if "xid" in dev.gauges:
            self.xid.labels(endpoint, gpu).set(dev.gauges["xid"])
        if (rate := dev.interconnect_bytes_per_second) is not None:
            self.interconnect.labels(endpoint, gpu).set(rate)

    def set_eviction_before_reuse(self, endpoint: str, share: float | None) -> None:
        """The endpoint's eviction-before-reuse share; no series while there is no value."""
        if share is None:
            with suppress(KeyError):
                self.eviction_before_reuse.remove(endpoint)
        else:
            self.eviction_before_reuse.labels(endpoint).set(share)
