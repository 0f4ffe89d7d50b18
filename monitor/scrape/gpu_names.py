"""The GPU exporters' families and labels, mapped onto canonical per-GPU fields (data only).

NVIDIA **dcgm-exporter** (names, types, HELP and units from ``etc/default-counters.csv`` and
``etc/dcp-metrics-included.csv``; label layout from ``internal/pkg/rendermetrics/render_metrics.go``;
release 4.5.3-4.8.2) and AMD's **device metrics exporter** (names, HELP and units from
``pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go``, fields and labels from
``docs/configuration/metricslist.md`` and ``example/config-gpu.json``). Versions and commits are in
tests/fixtures/gpu/SOURCES.md. :mod:`monitor.scrape.gpu` interprets this table.

``scale`` turns the exporter's unit into the canonical one: ratios 0..1 (DCGM's ``GPU_UTIL`` and
every AMD activity are percent), bytes (DCGM framebuffer MiB; AMD VRAM "MB" and XGMI "KB", read as
2^20 and 2^10 bytes), watts, °C. ``rank`` orders several names of one field (0 wins when present).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Exporter = Literal["dcgm", "amd"]
GpuKind = Literal["gauge", "counter"]

MIB: Final = float(2**20)
KIB: Final = float(2**10)


@dataclass(frozen=True)
class GpuSource:
    metric: str
    field: str
    kind: GpuKind = "gauge"
    scale: float = 1.0
    rank: int = 0


# fmt: off
DCGM_SOURCES: Final[tuple[GpuSource, ...]] = (
    GpuSource("DCGM_FI_DEV_GPU_UTIL", "util", scale=0.01),                 # gauge, %
    GpuSource("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_engine_active"),        # ratio (DCP)
    GpuSource("DCGM_FI_PROF_SM_ACTIVE", "sm_active"),                      # ratio (DCP; off by default)
    GpuSource("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor_active"),         # ratio (DCP)
    GpuSource("DCGM_FI_PROF_DRAM_ACTIVE", "memory_active"),                # ratio (DCP)
    GpuSource("DCGM_FI_DEV_FB_USED", "memory_used_bytes", scale=MIB),      # MiB
    GpuSource("DCGM_FI_DEV_FB_FREE", "memory_free_bytes", scale=MIB),      # MiB
    GpuSource("DCGM_FI_DEV_POWER_USAGE", "power_watts"),                   # W
    GpuSource("DCGM_FI_DEV_POWER_MGMT_LIMIT", "power_limit_watts"),        # W (the limit in force)
    GpuSource("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "power_limit_watts", rank=1),  # W
    GpuSource("DCGM_FI_DEV_MEM_COPY_UTIL", "memory_copy_util", scale=0.01),  # % (default set)
    # clock-event (throttle) reasons, a bitmask; renamed from CLOCK_THROTTLE_REASONS in DCGM 3.3
    GpuSource("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "clock_event_reasons"),
    GpuSource("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "clock_event_reasons", rank=1),
    GpuSource("DCGM_FI_DEV_GPU_TEMP", "temperature_celsius"),              # C
    GpuSource("DCGM_FI_DEV_XID_ERRORS", "xid"),                            # value of the last XID
    GpuSource("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc_uncorrectable", "counter"),
    # NVLink: the all-lanes counter of the default file (bytes, as its per-lane _L0 row says) ...
    GpuSource("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "interconnect_bytes", "counter"),
    # ... or the DCP rates when a counters file enables them (bytes per second)
    GpuSource("DCGM_FI_PROF_NVLINK_TX_BYTES", "interconnect_bytes_per_second"),
    GpuSource("DCGM_FI_PROF_NVLINK_RX_BYTES", "interconnect_bytes_per_second"),
)

AMD_SOURCES: Final[tuple[GpuSource, ...]] = (
    GpuSource("gpu_gfx_activity", "util", scale=0.01),                     # %
    GpuSource("gpu_prof_sm_active", "sm_active", scale=0.01),              # % (profiler metrics)
    GpuSource("gpu_prof_tensor_active_percent", "tensor_active", scale=0.01),  # % MFMA
    GpuSource("gpu_umc_activity", "memory_active", scale=0.01),            # %
    GpuSource("gpu_used_vram", "memory_used_bytes", scale=MIB),            # MB
    GpuSource("gpu_free_vram", "memory_free_bytes", scale=MIB),            # MB
    GpuSource("gpu_package_power", "power_watts"),                         # W, MI3xx socket power
    GpuSource("gpu_power_usage", "power_watts", rank=1),                   # W
    GpuSource("gpu_average_package_power", "power_watts", rank=2),         # W, MI2xx
    GpuSource("gpu_junction_temperature", "temperature_celsius"),          # C, MI3xx
    GpuSource("gpu_edge_temperature", "temperature_celsius", rank=1),      # C, MI2xx
    GpuSource("gpu_ecc_uncorrect_total", "ecc_uncorrectable", "counter"),  # gauge of a running count
    GpuSource("gpu_xgmi_link_rx", "interconnect_bytes", "counter", scale=KIB),  # KB, per link_index
    GpuSource("gpu_xgmi_link_tx", "interconnect_bytes", "counter", scale=KIB),
)
# fmt: on

#: Fields averaged (not summed) when one GPU has several series of them.
RATIO_FIELDS: Final = frozenset(
    {
        "util",
        "gr_engine_active",
        "sm_active",
        "tensor_active",
        "memory_active",
        "memory_copy_util",
        "temperature_celsius",
        "power_limit_watts",
    }
)
#: Fields whose several series on one GPU are alternatives: the largest is kept (the last XID).
MAX_FIELDS: Final = frozenset({"xid", "clock_event_reasons"})


@dataclass(frozen=True)
class GpuLabels:
    """Which labels of an exporter name the GPU, its identity and its software."""

    gpu: tuple[str, ...]  # the GPU key (index, then MIG/partition instance)
    uuid: tuple[str, ...]
    model: tuple[str, ...]
    hostname: tuple[str, ...]
    driver: tuple[str, ...]
    firmware: tuple[str, ...]


LABELS: Final[dict[Exporter, GpuLabels]] = {
    # Hostname before dcgm-exporter d5e5f51 (2026-05, "Rename Hostname label to hostname"), hostname after
    "dcgm": GpuLabels(
        gpu=("gpu", "GPU_I_ID"),
        uuid=("UUID", "uuid"),
        model=("modelName",),
        hostname=("Hostname", "hostname"),
        driver=("DCGM_FI_DRIVER_VERSION",),
        firmware=("DCGM_FI_DEV_VBIOS_VERSION", "DCGM_FI_DEV_INFOROM_IMAGE_VER"),
    ),
    # driver_version and vbios_version are optional labels (GPUConfig.Labels), off unless configured
    "amd": GpuLabels(
        gpu=("gpu_id",),
        uuid=("gpu_uuid",),
        model=("card_model",),
        hostname=("hostname",),
        driver=("driver_version",),
        firmware=("vbios_version",),
    ),
}

DCGM_PREFIX: Final = "DCGM_FI_"
#: AMD families that identify a device-metrics-exporter page (after its optional MetricsFieldPrefix).
AMD_MARKERS: Final = ("gpu_nodes_total", "gpu_health", *sorted({s.metric for s in AMD_SOURCES}))

#: DCGM's "blank" sentinels (dcgm_structs.h): int64 0x7ffffffffffffff0 and up, fp64 2^47 .. 2^47+3.
#: dcgm-exporter prints them as values (its README shows 9223372036854775794, NOT_SUPPORTED);
#: such a sample says "no value", never a reading.
DCGM_INT64_BLANK: Final = float(0x7FFFFFFFFFFFFFF0)
DCGM_FP64_BLANK: Final = float(2**47)


def is_blank(value: float) -> bool:
    """Whether a DCGM sample is one of DCGM's "no value" sentinels."""
    return value >= DCGM_INT64_BLANK or DCGM_FP64_BLANK <= value < DCGM_FP64_BLANK + 4
