"""The deployment fingerprint: which server, version and KV-cache configuration an endpoint runs.

Built from ``GET /version``, ``GET /v1/models`` (``max_model_len``) and the page itself
(``vllm:cache_config_info`` labels; SGLang's ``page_size``/``context_len`` gauges), plus the GPU
exporter's page when the endpoint has one (:meth:`Fingerprint.with_gpu`: driver and firmware
versions from the exporter's labels, GPU model and count — the M3 guide asks to record them).
Exported as ``m3mon_deployment_info`` so a dashboard shows when a deployment changed; a block size
other than MiniMax M3's required 128 is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from monitor.conventions import M3_BLOCK_SIZE
from monitor.scrape.reading import Reading

if TYPE_CHECKING:
    from monitor.scrape.gpu import GpuReading

#: Labels of ``m3mon_deployment_info`` besides ``endpoint`` (always all present, "" when unknown).
INFO_KEYS = ("backend", "generation", "version", "model", "max_model_len", "block_size", "cache_dtype",
             "enable_prefix_caching", "gpu_memory_utilization", "num_gpu_blocks", "gpu_exporter",
             "gpu_model", "gpu_count", "gpu_driver_version", "gpu_firmware_version")  # fmt: skip


@dataclass(frozen=True)
class Fingerprint:
    backend: str
    generation: str
    version: str | None = None
    model: str | None = None
    max_model_len: int | None = None
    block_size: int | None = None
    cache_dtype: str | None = None
    enable_prefix_caching: bool | None = None
    gpu_memory_utilization: float | None = None
    num_gpu_blocks: int | None = None
    gpu_exporter: str | None = None  # "dcgm" or "amd": the endpoint's GPU page, when configured
    gpu_model: str | None = None
    gpu_count: int | None = None
    gpu_driver_version: str | None = None  # DCGM_FI_DRIVER_VERSION / AMD driver_version label
    gpu_firmware_version: str | None = None  # DCGM VBIOS/InfoROM label / AMD vbios_version label

    def with_gpu(self, gpu: GpuReading | None) -> Fingerprint:
        """This fingerprint with what the endpoint's GPU exporter page says (unchanged for None)."""
        if gpu is None:
            return self
        return replace(
            self,
            gpu_exporter=gpu.exporter,
            gpu_model=gpu.model,
            gpu_count=len(gpu.devices),
            gpu_driver_version=gpu.driver_version,
            gpu_firmware_version=gpu.firmware_version,
        )

    @property
    def block_size_ok(self) -> bool | None:
        """False when the block size is known and is not MiniMax M3's 128."""
        return None if self.block_size is None else self.block_size == M3_BLOCK_SIZE

    @property
    def warnings(self) -> tuple[str, ...]:
        if self.block_size_ok is False:
            return (f"block size {self.block_size} is not the {M3_BLOCK_SIZE} MiniMax M3 requires",)
        return ()

    def info_labels(self) -> dict[str, str]:
        """Values of :data:`INFO_KEYS` as label strings."""
        out = {}
        for key in INFO_KEYS:
            value = getattr(self, key)
            out[key] = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in INFO_KEYS}, "warnings": list(self.warnings)}


def _int(value: object) -> int | None:
    try:
        return int(float(str(value)))
    except (TypeError, ValueError):
        return None


def _float(value: object) -> float | None:
    try:
        return float(str(value))
    except (TypeError, ValueError):
        return None


def _bool(value: str | None) -> bool | None:
    return None if value is None else value.strip().lower() == "true"


def _from_models(models_doc: Any, model: str | None) -> tuple[str | None, int | None]:
    data = models_doc.get("data") if isinstance(models_doc, dict) else None
    if not isinstance(data, list):
        return None, None
    entries = [d for d in data if isinstance(d, dict)]
    chosen = next((d for d in entries if d.get("id") == model), entries[0] if entries else None)
    if chosen is None:
        return None, None
    return str(chosen.get("id")), _int(chosen.get("max_model_len"))


def _engine_gauge(reading: Reading, name: str) -> float | None:
    for engines in reading.models.values():
        for er in engines.values():
            if name in er.gauges:
                return er.gauges[name]
    return None


def build(
    reading: Reading, version_doc: Any = None, models_doc: Any = None, model: str | None = None
) -> Fingerprint:
    """Combine what the page, ``/version`` and ``/v1/models`` say."""
    cache = next(iter(reading.cache_config.values()), {})
    served, max_len = _from_models(models_doc, model)
    version = version_doc.get("version") if isinstance(version_doc, dict) else None
    return Fingerprint(
        backend=reading.backend,
        generation=reading.generation,
        version=str(version) if version is not None else None,
        model=served or (model if model in reading.models else next(iter(reading.models), None)),
        max_model_len=max_len if max_len is not None else _int(_engine_gauge(reading, "max_model_len")),
        block_size=_int(cache.get("block_size", _engine_gauge(reading, "block_size"))),
        cache_dtype=cache.get("cache_dtype"),
        enable_prefix_caching=_bool(cache.get("enable_prefix_caching")),
        gpu_memory_utilization=_float(cache.get("gpu_memory_utilization")),
        num_gpu_blocks=_int(cache.get("num_gpu_blocks")),
    )
