"""What identifies a deployment: the server's fingerprint plus what the config says.

The collector fills the server-observed fields (from ``vllm:cache_config_info``, the version it
detects and, when the endpoint has a GPU exporter, the GPU model, count, driver and firmware
versions from that page's labels); :meth:`DeploymentFingerprint.with_config` adds the config's
deployment block, and :meth:`DeploymentFingerprint.observed` is the one place both are put
together (the service's scrape job and ``m3mon contract`` store the same thing). The store writes
a new ``deployments`` row only when :attr:`DeploymentFingerprint.digest` changes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from monitor.model import Deployment

if TYPE_CHECKING:
    from monitor.scrape.fingerprint import Fingerprint

#: The GPU exporter's facts. They enter the digest only when known, so the digest of a deployment
#: without a GPU exporter is the one of the fields before them (stored rows keep their digests).
GPU_FIELDS = ("gpu_model", "gpu_count", "gpu_driver_version", "gpu_firmware_version")


@dataclass(frozen=True)
class DeploymentFingerprint:
    """Everything that, when it changes, makes a different deployment."""

    vllm_version: str | None = None
    max_model_len: int | None = None
    block_size: int | None = None
    kv_cache_dtype: str | None = None
    prefix_caching: bool | None = None
    gpu_memory_utilization: float | None = None
    image_digest: str | None = None
    checkpoint: str | None = None
    tensor_parallel_size: int | None = None
    expert_parallel_size: int | None = None
    config_max_model_len: int | None = None
    config_kv_cache_dtype: str | None = None
    gpu_model: str | None = None  # GPU exporter page: the first GPU's model name
    gpu_count: int | None = None  # GPUs (or MIG/partition instances) the page shows
    gpu_driver_version: str | None = None  # DCGM_FI_DRIVER_VERSION / AMD driver_version label
    gpu_firmware_version: str | None = None  # DCGM VBIOS / AMD vbios_version label

    @classmethod
    def observed(cls, fp: Fingerprint, deployment: Deployment) -> DeploymentFingerprint:
        """What is stored for a collector fingerprint (GPU facts included when it has them, see
        :meth:`monitor.scrape.fingerprint.Fingerprint.with_gpu`) of an endpoint configured with
        ``deployment``."""
        return cls(
            vllm_version=fp.version,
            max_model_len=fp.max_model_len,
            block_size=fp.block_size,
            kv_cache_dtype=fp.cache_dtype,
            prefix_caching=fp.enable_prefix_caching,
            gpu_memory_utilization=fp.gpu_memory_utilization,
            gpu_model=fp.gpu_model,
            gpu_count=fp.gpu_count,
            gpu_driver_version=fp.gpu_driver_version,
            gpu_firmware_version=fp.gpu_firmware_version,
        ).with_config(deployment)

    def with_config(self, deployment: Deployment) -> DeploymentFingerprint:
        """This fingerprint plus the configured deployment facts."""
        return replace(
            self,
            image_digest=deployment.image_digest,
            checkpoint=deployment.checkpoint,
            tensor_parallel_size=deployment.tensor_parallel_size,
            expert_parallel_size=deployment.expert_parallel_size,
            config_max_model_len=deployment.max_model_len,
            config_kv_cache_dtype=deployment.kv_cache_dtype,
        )

    @property
    def gpu_known(self) -> bool:
        """Whether any GPU fact is known (the endpoint's GPU exporter page was read)."""
        return any(getattr(self, name) is not None for name in GPU_FIELDS)

    @property
    def digest(self) -> str:
        """SHA-256 of the JSON (keys sorted) of every field, leaving out each GPU field that is
        unknown (``None``): without GPU facts it is the digest of the first twelve fields alone."""
        doc = {k: v for k, v in asdict(self).items() if v is not None or k not in GPU_FIELDS}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DeploymentFingerprint:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
