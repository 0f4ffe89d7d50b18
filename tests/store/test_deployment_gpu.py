"""The stored deployment fingerprint carries the GPU exporter's facts (issue 25) without changing
the digest of a deployment that has none (docs/store-and-slo.md: SHA-256 of ``json.dumps(fields,
sort_keys=True)`` over the twelve fields, plus each GPU field that is known).

The expected digests are computed here from the documented fields, never by the code under test;
the literal is that same computation written down, so a change of the formula cannot slip through
as a change of both sides.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from monitor.store import DeploymentFingerprint, Store
from monitor.store.ops import deployment_op
from monitor.store.repos import DeploymentRepo
from tests.store.helpers import T0

#: The twelve documented fields of a deployment without a GPU exporter (docs/store-and-slo.md).
DOCUMENTED: dict[str, Any] = {
    "vllm_version": "0.11.0", "max_model_len": 196608, "block_size": 128, "kv_cache_dtype": "fp8",
    "prefix_caching": True, "gpu_memory_utilization": 0.9, "image_digest": "vllm/vllm-openai:v0.11.0",
    "checkpoint": "MiniMaxAI/MiniMax-M3", "tensor_parallel_size": 8, "expert_parallel_size": None,
    "config_max_model_len": 196608, "config_kv_cache_dtype": "fp8",
}  # fmt: skip
#: sha256(json.dumps(DOCUMENTED, sort_keys=True)): the digest such a deployment has had since 0001.
TODAY = "1934946c3a953e11fa1a225bd5ab317916ae61df804111169d28cfe4462e8d78"
GPU = {"gpu_model": "NVIDIA H200", "gpu_count": 8, "gpu_driver_version": "550.54.15",
       "gpu_firmware_version": "96.00.89.00.01"}  # fmt: skip


def _sha(doc: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def test_the_digest_leaves_out_unknown_gpu_facts_and_includes_known_ones() -> None:
    assert _sha(DOCUMENTED) == TODAY
    # no GPU exporter: every GPU field unknown, the digest stored rows already have
    assert DeploymentFingerprint(**DOCUMENTED).digest == TODAY
    # with a GPU exporter, each known GPU fact is part of the digest
    assert DeploymentFingerprint(**DOCUMENTED, **GPU).digest == _sha({**DOCUMENTED, **GPU})
    driver_only = {"gpu_driver_version": "550.54.15"}
    assert DeploymentFingerprint(**DOCUMENTED, **driver_only).digest == _sha({**DOCUMENTED, **driver_only})


def test_a_driver_change_is_a_new_deployment_and_unread_gpu_facts_are_none(store: Store) -> None:
    base = DeploymentFingerprint(**DOCUMENTED, **GPU)
    upgraded = DeploymentFingerprint(**DOCUMENTED, **{**GPU, "gpu_driver_version": "560.35.03"})
    store.apply([
        deployment_op("m3-interactive", base, T0),
        deployment_op("m3-interactive", DeploymentFingerprint(**DOCUMENTED), T0 + 10),  # GPU page unread
        deployment_op("m3-interactive", upgraded, T0 + 20),
        deployment_op("m3-interactive", DeploymentFingerprint(**DOCUMENTED), T0 + 30),
    ])  # fmt: skip
    with store.session() as s:
        rows = DeploymentRepo(s).history("m3-interactive")
        got = [(r.gpu_driver_version, r.gpu_firmware_version, r.gpu_model, r.gpu_count, r.first_seen,
                r.last_seen, r.fingerprint) for r in rows]  # fmt: skip
    assert got == [
        ("550.54.15", "96.00.89.00.01", "NVIDIA H200", 8, T0, T0 + 10, _sha({**DOCUMENTED, **GPU})),
        ("560.35.03", "96.00.89.00.01", "NVIDIA H200", 8, T0 + 20, T0 + 30,
         _sha({**DOCUMENTED, **GPU, "gpu_driver_version": "560.35.03"})),
    ]  # fmt: skip
