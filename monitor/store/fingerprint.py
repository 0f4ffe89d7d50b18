"""What identifies a deployment: the server's fingerprint plus what the config says.

The collector fills the server-observed fields (from ``vllm:cache_config_info`` and the version
it detects); :meth:`DeploymentFingerprint.with_config` adds the config's deployment block. The
store writes a new ``deployments`` row only when :attr:`DeploymentFingerprint.digest` changes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from monitor.model import Deployment


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
    def digest(self) -> str:
        """Stable SHA-256 of all fields."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DeploymentFingerprint:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
