"""A small migrated SQLite store for contract tests: one endpoint ``pool`` serving class ``small``,
two deployment fingerprints, hand-written replay runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

from monitor.model import Model, load_model
from monitor.store.fingerprint import DeploymentFingerprint
from monitor.store.migrate import upgrade
from monitor.store.replays import StoredRun, save_run
from monitor.store.repos import DeploymentRepo
from monitor.store.store import Store
from tests.support.configs import service_sections

OLD = DeploymentFingerprint(vllm_version="0.32.1", max_model_len=8192, kv_cache_dtype="auto")
NEW = DeploymentFingerprint(vllm_version="0.33.0", max_model_len=8192, kv_cache_dtype="fp8")


def model_of(folder: Path) -> Model:
    path = folder / "m3mon.yaml"
    path.write_text(textwrap.dedent("""\
        version: m3mon/v1
        endpoints:
          - {name: pool, base_url: "http://127.0.0.1:9", model: m, classes: [small]}
        request_classes:
          - name: small
            max_context_tokens: 4096
            probes: [chat]
            slos:
              - {name: ttft-p95, sli: ttft, threshold: 0.5s, objective: 95, source: probes}
        """) + service_sections(folder))  # fmt: skip
    upgrade(f"sqlite:///{folder}/m3mon.db")
    return load_model(path)


def run_of(fp: DeploymentFingerprint, at: float, rate: float, ok: bool) -> StoredRun:
    return StoredRun(0, "pool", "small", at, 10.0, "rate", rate, "p", fp.digest, fp.to_dict(), ok, {})


def add_rows(
    model: Model, *, deployments: list[tuple[DeploymentFingerprint, float]], runs: list[StoredRun]
) -> None:
    db = Store(model.storage.url)
    try:
        with db.session() as s:
            for fp, at in deployments:
                DeploymentRepo(s).observe("pool", fp, at)
            for run in runs:
                save_run(s, run)
    finally:
        db.close()
