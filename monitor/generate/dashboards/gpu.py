"""The engine dashboard's GPU row: DCGM and AMD utilisation beside the endpoint's queue and KV cache.

Reads the GPU exporters Prometheus scrapes itself (job :data:`monitor.conventions.JOB_GPU`, one
target per endpoint with an ``endpoint`` label, docs/generate.md): dcgm-exporter's ``DCGM_FI_*``
and the AMD device metrics exporter's ``gpu_*`` families (without a ``MetricsFieldPrefix``), in
their own units (DCGM util and AMD activity in percent, DCGM_FI_PROF_* ratios, framebuffer MiB).
An endpoint without a GPU exporter simply has no GPU series; the vLLM lines still show.
"""

from __future__ import annotations

from monitor import conventions as cv
from monitor.generate.dashboards.common import RATE
from monitor.generate.dashboards.panels import Layout, Query, timeseries
from monitor.model import Model

ROW = "GPUs beside queue and KV cache"


def gpu_sel() -> str:
    return f'{{job="{cv.JOB_GPU}",endpoint=~"$endpoint"}}'


def _utilisation(g: str, v: str) -> list[Query]:
    return [
        Query(f"avg by (endpoint) (DCGM_FI_DEV_GPU_UTIL{g}) / 100", "{{endpoint}} GPU util (DCGM)"),
        Query(f"avg by (endpoint) (gpu_gfx_activity{g}) / 100", "{{endpoint}} GFX activity (AMD)"),
        Query(f"max by (endpoint) ({cv.VLLM_KV_USAGE}{v})", "{{endpoint}} KV cache use"),
    ]


def _activity(g: str) -> list[Query]:
    return [
        Query(f"avg by (endpoint) (DCGM_FI_PROF_SM_ACTIVE{g})", "{{endpoint}} SM active (DCGM)"),
        Query(f"avg by (endpoint) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{g})", "{{endpoint}} tensor active (DCGM)"),
        Query(f"avg by (endpoint) (gpu_prof_sm_active{g}) / 100", "{{endpoint}} SM active (AMD)"),
        Query(
            f"avg by (endpoint) (gpu_prof_tensor_active_percent{g}) / 100", "{{endpoint}} MFMA active (AMD)"
        ),
    ]


def _queue(g: str, v: str) -> list[Query]:
    return [
        Query(f"sum by (endpoint) ({cv.VLLM_WAITING}{v})", "{{endpoint}} waiting requests"),
        Query(f"sum by (endpoint) ({cv.VLLM_RUNNING}{v})", "{{endpoint}} running requests"),
        Query(
            f"count by (endpoint) (DCGM_FI_DEV_GPU_UTIL{g} >= 95)", "{{endpoint}} GPUs >= 95 % busy (DCGM)"
        ),
        Query(f"count by (endpoint) (gpu_gfx_activity{g} >= 95)", "{{endpoint}} GPUs >= 95 % busy (AMD)"),
    ]


def _memory(g: str) -> list[Query]:
    return [
        Query(f"max by (endpoint) (DCGM_FI_DEV_FB_USED{g}\n"
              f"  / (DCGM_FI_DEV_FB_USED{g} + DCGM_FI_DEV_FB_FREE{g}))", "{{endpoint}} fullest GPU (DCGM)"),
        Query(f"max by (endpoint) (gpu_used_vram{g} / (gpu_used_vram{g} + gpu_free_vram{g}))",
              "{{endpoint}} fullest GPU (AMD)"),
    ]  # fmt: skip


def _links(g: str) -> list[Query]:
    return [
        Query(f"sum by (endpoint) (rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{g}[{RATE}]))",
              "{{endpoint}} NVLink"),
        Query(f"sum by (endpoint) (rate(gpu_xgmi_link_rx{g}[{RATE}])\n"
              f"  + rate(gpu_xgmi_link_tx{g}[{RATE}])) * 1024", "{{endpoint}} XGMI"),
    ]  # fmt: skip


def add_gpu_row(lay: Layout, model: Model, vllm: str) -> None:
    """The GPU row; ``vllm`` is the dashboard's vLLM selector."""
    g = gpu_sel()
    lay.row(ROW)
    title = "GPU utilisation (DCGM and AMD) and KV cache use"
    lay.add(timeseries(title, _utilisation(g, vllm), unit="percentunit"))
    lay.add(timeseries("SM and tensor activity", _activity(g), unit="percentunit"))
    lay.add(timeseries("Queue beside saturated GPUs", _queue(g, vllm)))
    lay.add(timeseries("GPU memory used", _memory(g), unit="percentunit"))
    lay.add(timeseries("GPU power", [
        Query(f"sum by (endpoint) (DCGM_FI_DEV_POWER_USAGE{g})", "{{endpoint}} (DCGM)"),
        Query(f"sum by (endpoint) (gpu_package_power{g})", "{{endpoint}} (AMD)"),
    ], unit="watt"))  # fmt: skip
    lay.add(timeseries("NVLink / XGMI traffic", _links(g), unit="Bps"))
    lay.add(timeseries("XID errors (last XID per GPU)", [
        Query(f"max by (endpoint, gpu) (DCGM_FI_DEV_XID_ERRORS{g}) > 0", "{{endpoint}} GPU {{gpu}}"),
    ]))  # fmt: skip
    monitor = f'{{job="{model.alerting.job_monitor}",endpoint=~"$endpoint"}}'
    lay.add(timeseries("KV eviction before reuse", [
        Query(f"max by (endpoint) ({cv.KV_EVICTION_BEFORE_REUSE}{monitor})", "{{endpoint}}"),
    ], unit="percentunit"))  # fmt: skip
