"""A dcgm-exporter page for the simulated node (``m3mon sim --dcgm-gpus N``: ``GET /dcgm/metrics``).

Families, types and HELP are dcgm-exporter 4.5.3-4.8.2's ``etc/default-counters.csv`` with the
``DCGM_FI_PROF_SM_ACTIVE`` row enabled; every sample has the labels of its ``render_metrics.go``
template (``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``, then
``DCGM_FI_DRIVER_VERSION``, :data:`DRIVER` unless the ``gpu_driver`` fault says otherwise; the XID
family adds ``err_code``/``err_msg``). The values follow the simulator's own load, and the
``gpu_*`` faults (docs/simulator.md "DCGM surface" has the formulas).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from monitor.sim.faults import Faults

# (name, type, HELP) in the file's order
FAMILIES: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both "
     "protocol headers and data payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both "
     "protocol headers and data payloads - in bytes per second."),
)  # fmt: skip

MODEL = "NVIDIA H200"
DRIVER = "570.124.06"
FB_TOTAL_MIB = 143771  # an H200's framebuffer as nvidia-smi reports it
FB_RESERVED_MIB = 849
IDLE_WATTS, PEAK_WATTS = 120.0, 700.0
NVLINK_PEAK_BYTES = 450e9  # per GPU per second at full SM activity (H200 NVLink 4: 900 GB/s both ways)
#: ``xidErrCodeToText`` of dcgm-exporter's internal/pkg/collector/xid_errors.go (the codes the fault uses).
XID_TEXT = {
    0: "No Error",
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    48: "Double Bit ECC Error",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure",
    74: "NVLINK Error",
    79: "GPU has fallen off the bus",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
}


@dataclass(frozen=True)
class Load:
    """What the engine is doing: running requests out of its slots, and KV-pool use 0..1."""

    running: int
    max_num_seqs: int
    kv_usage: float


def activity(load: Load, faults: Faults) -> dict[str, float]:
    """SM/tensor/DRAM activity (ratios) and GPU utilisation (%) for a load (docs/simulator.md)."""
    if faults.gpu_saturated:
        return {"sm": 0.98, "tensor": 0.85, "dram": 0.9, "util": 100.0}
    if load.running <= 0:
        return {"sm": 0.0, "tensor": 0.0, "dram": 0.0, "util": 0.0}
    x = min(1.0, max(load.running / max(1, load.max_num_seqs), load.kv_usage))
    sm = 0.2 + 0.75 * x
    return {
        "sm": sm,
        "tensor": 0.5 * sm,
        "dram": 0.3 + 0.5 * x,
        "util": float(round(100 * min(1.0, 0.5 + 0.5 * x))),
    }


class DcgmSurface:
    """The DCGM page of ``gpus`` GPUs whose counters integrate the load between renders."""

    def __init__(
        self,
        gpus: int,
        seed: int,
        memory_share: float,
        load: Callable[[], Load],
        faults: Callable[[], Faults],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.gpus, self.load, self.faults, self.clock = gpus, load, faults, clock
        self.memory_share = memory_share
        self.uuids = [f"GPU-{uuid.UUID(int=(seed << 16) + i + 1, version=4)}" for i in range(gpus)]
        self.energy_mj = [0.0] * gpus
        self.nvlink = [0.0] * gpus
        self.last = clock()

    def _advance(self, act: dict[str, float]) -> None:
        now = self.clock()
        dt, self.last = max(0.0, now - self.last), now
        for i in range(self.gpus):
            self.energy_mj[i] += self._watts(act) * dt * 1000.0
            self.nvlink[i] += NVLINK_PEAK_BYTES * act["sm"] * dt

    @staticmethod
    def _watts(act: dict[str, float]) -> float:
        return round(IDLE_WATTS + (PEAK_WATTS - IDLE_WATTS) * act["sm"], 3)

    def values(self, i: int, act: dict[str, float], faults: Faults) -> dict[str, float]:
        used = (
            FB_TOTAL_MIB - FB_RESERVED_MIB
            if faults.gpu_memory_full
            else round(self.memory_share * FB_TOTAL_MIB)
        )
        return {
            "DCGM_FI_DEV_SM_CLOCK": 1980 if act["sm"] else 345, "DCGM_FI_DEV_MEM_CLOCK": 3201,
            "DCGM_FI_DEV_MEMORY_TEMP": 9223372036854775794,  # NOT_SUPPORTED on this part, as in the README
            "DCGM_FI_DEV_GPU_TEMP": round(35 + 40 * act["sm"]), "DCGM_FI_DEV_POWER_USAGE": self._watts(act),
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": math.floor(self.energy_mj[i]),
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0, "DCGM_FI_DEV_GPU_UTIL": act["util"],
            "DCGM_FI_DEV_MEM_COPY_UTIL": round(100 * act["dram"]), "DCGM_FI_DEV_ENC_UTIL": 0,
            "DCGM_FI_DEV_DEC_UTIL": 0, "DCGM_FI_DEV_XID_ERRORS": (faults.gpu_xid or 0) if i == 0 else 0,
            "DCGM_FI_DEV_FB_FREE": FB_TOTAL_MIB - FB_RESERVED_MIB - used, "DCGM_FI_DEV_FB_USED": used,
            "DCGM_FI_DEV_FB_RESERVED": FB_RESERVED_MIB,
            "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": math.floor(self.nvlink[i]),
            "DCGM_FI_DEV_VGPU_LICENSE_STATUS": 0, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 0,
            "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 0, "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0,
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": round(act["util"] / 100, 6),
            "DCGM_FI_PROF_SM_ACTIVE": round(act["sm"], 6),
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": round(act["tensor"], 6),
            "DCGM_FI_PROF_DRAM_ACTIVE": round(act["dram"], 6),
            "DCGM_FI_PROF_PCIE_TX_BYTES": round(2e8 * act["sm"]),
            "DCGM_FI_PROF_PCIE_RX_BYTES": round(5e8 * act["sm"]),
        }  # fmt: skip

    def render(self) -> str:
        faults = self.faults()
        act = activity(self.load(), faults)
        self._advance(act)
        per_gpu = [self.values(i, act, faults) for i in range(self.gpus)]
        driver = faults.gpu_driver or DRIVER
        out: list[str] = []
        for name, kind, help_text in FAMILIES:
            out.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}")
            for i, vals in enumerate(per_gpu):
                value = vals[name]
                extra = ""
                if name == "DCGM_FI_DEV_XID_ERRORS":
                    code = int(value)
                    extra = f',err_code="{code}",err_msg="{XID_TEXT.get(code, "Unknown Error")}"'
                out.append(
                    f'{name}{{gpu="{i}",UUID="{self.uuids[i]}",'
                    f'pci_bus_id="00000000:{0x18 + 0x11 * i:02X}:00.0",'
                    f'device="nvidia{i}",modelName="{MODEL}",Hostname="m3sim",DCGM_FI_DRIVER_VERSION="{driver}"'
                    f"{extra}}} {_go(value)}"
                )
        return "\n".join(out) + "\n"


def _go(value: float) -> str:
    """The value as dcgm-exporter prints it: integers without a decimal point, floats as Go's %v."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
