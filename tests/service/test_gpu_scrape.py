"""The service's scrape job reads each endpoint's GPU exporter too (the real simulator's DCGM page).

The per-GPU gauges must equal what the page itself says (read here with prometheus_client's own
parser, not the collector), follow the simulator's GPU faults, drop when the exporter fails, and the
fingerprint must carry the exporter's driver version — in the stored deployment too, so a driver
upgrade is a new deployment (and an endpoint without a GPU exporter keeps its digest).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from monitor.exporter import Exporter
from monitor.model import load_model
from monitor.service import jobs as jobs_module
from monitor.service.jobs import Jobs
from monitor.sim.harness import running_simulator
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.tables import DeploymentRow, GpuSampleRow
from tests.service.live import config_doc
from tests.support import localhttp

pytestmark = pytest.mark.timeout(120)
FAST = {"decode_itl": 0.002, "prefill_overhead": 0.001, "jitter": 0.0}


def samples(text: str, name: str) -> dict[tuple[str, ...], float]:
    return {tuple(s.labels.values()): s.value for f in text_string_to_metric_families(text)
            for s in f.samples if s.name == name}  # fmt: skip


def test_gpu_exporter_scraped_with_the_endpoint(tmp_path: Path) -> None:
    with running_simulator(dcgm_gpus=2, **FAST) as sim:
        doc = config_doc(tmp_path, 9464)
        doc["endpoints"][0]["base_url"] = sim.base_url
        doc["endpoints"][0]["gpu_exporter"] = {"url": f"{sim.base_url}/dcgm/metrics", "kind": "dcgm"}
        (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
        model = load_model(tmp_path / "m.yaml")
        upgrade(model.storage.url)
        store, exporter = Store(model.storage.url), Exporter(model)
        jobs = Jobs(model, store, exporter)
        endpoint = model.endpoints[0]

        async def run() -> None:
            await jobs.scrape(endpoint)
            sim.set_faults(gpu_xid=48, gpu_memory_full=True, gpu_saturated=True)
            await jobs.scrape(endpoint)
            await jobs.close()

        asyncio.run(run())
        page = localhttp.get(f"{sim.base_url}/dcgm/metrics").text
        published = exporter.render().decode()
        with store.session() as session:
            stored = session.scalars(select(GpuSampleRow).order_by(GpuSampleRow.time)).all()
            rows = [(r.endpoint, r.exporter, r.gpus, r.sm_active, r.tensor_active, r.memory_used_ratio, r.xid_gpus)
                    for r in stored]  # fmt: skip
        store.close()
    fb_free = {k[0]: v for k, v in samples(page, "DCGM_FI_DEV_FB_FREE").items()}
    assert fb_free == {"0": 0.0, "1": 0.0}
    assert samples(published, "m3mon_gpu_memory_free_bytes") == {("pool", "0"): 0.0, ("pool", "1"): 0.0}
    assert samples(published, "m3mon_gpu_last_xid") == {("pool", "0"): 48.0, ("pool", "1"): 0.0}
    assert samples(published, "m3mon_gpu_scrape_success") == {("pool",): 1.0}
    fb_used = {k[0]: v for k, v in samples(page, "DCGM_FI_DEV_FB_USED").items()}
    assert samples(published, "m3mon_gpu_memory_used_bytes")[("pool", "1")] == fb_used["1"] * 2**20
    signals = jobs.gpu.signals["pool"]
    assert signals.start is not None and signals.xid_gpus == {"0": 48}
    # each good GPU scrape is stored as the report's verdict reads it (means over the page's GPUs)
    sm = samples(page, "DCGM_FI_PROF_SM_ACTIVE").values()
    tensor = samples(page, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE").values()
    assert len(rows) == 2 and rows[0][:4] == ("pool", "dcgm", 2, 0.0) and rows[0][6] == 0
    assert rows[1] == ("pool", "dcgm", 2, pytest.approx(sum(sm) / 2), pytest.approx(sum(tensor) / 2), 1.0, 1)
    info = samples(published, "m3mon_deployment_info")
    assert any("570.124.06" in key for key in info), info


def test_a_failed_gpu_scrape_drops_the_gpu_series(tmp_path: Path) -> None:
    doc = config_doc(tmp_path, 9464)
    doc["endpoints"][0]["gpu_exporter"] = {"url": "http://127.0.0.1:9/metrics"}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
    model = load_model(tmp_path / "m.yaml")
    upgrade(model.storage.url)
    store, exporter = Store(model.storage.url), Exporter(model)
    jobs = Jobs(model, store, exporter)

    async def run() -> None:
        assert await jobs.gpu.scrape(model.endpoints[0]) is None
        await jobs.close()

    asyncio.run(run())
    store.close()
    published = exporter.render().decode()
    assert samples(published, "m3mon_gpu_scrape_success") == {("pool",): 0.0}
    assert samples(published, "m3mon_gpu_utilization_ratio") == {}


def _sha(doc: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


#: docs/store-and-slo.md: the twelve fields of the digest; GPU fields join it only when known.
DIGEST_FIELDS = ("vllm_version", "max_model_len", "block_size", "kv_cache_dtype", "prefix_caching",
                 "gpu_memory_utilization", "image_digest", "checkpoint", "tensor_parallel_size",
                 "expert_parallel_size", "config_max_model_len", "config_kv_cache_dtype")  # fmt: skip
GPU_FIELDS = ("gpu_model", "gpu_count", "gpu_driver_version", "gpu_firmware_version")


def test_a_gpu_driver_upgrade_is_a_new_deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25: the driver version on the DCGM page is part of the stored deployment; the
    simulator's ``gpu_driver`` fault upgrades it, and the next fingerprint starts a new
    ``deployments`` row that differs from the first in the driver alone. Expected values are the
    page's own labels (prometheus_client's parser), digests the documented formula."""
    monkeypatch.setattr(jobs_module, "FINGERPRINT_EVERY", 2)  # fingerprint at scrapes 1, 3, ...
    with running_simulator(dcgm_gpus=2, **FAST) as sim:
        doc = config_doc(tmp_path, 9464)
        doc["endpoints"][0]["base_url"] = sim.base_url
        doc["endpoints"][0]["gpu_exporter"] = {"url": f"{sim.base_url}/dcgm/metrics", "kind": "dcgm"}
        (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
        model = load_model(tmp_path / "m.yaml")
        upgrade(model.storage.url)
        store, exporter = Store(model.storage.url), Exporter(model)
        jobs = Jobs(model, store, exporter)
        endpoint = model.endpoints[0]
        pages = []

        async def run() -> None:
            await jobs.scrape(endpoint)
            pages.append(localhttp.get(f"{sim.base_url}/dcgm/metrics").text)
            sim.set_faults(gpu_driver="575.57.08")
            await jobs.scrape(endpoint)
            await jobs.scrape(endpoint)
            await jobs.close()

        asyncio.run(run())
        pages.append(localhttp.get(f"{sim.base_url}/dcgm/metrics").text)
        with store.session() as session:
            rows = [{c: getattr(r, c) for c in ("fingerprint", *DIGEST_FIELDS, *GPU_FIELDS)}
                    for r in session.scalars(select(DeploymentRow).order_by(DeploymentRow.first_seen))]  # fmt: skip
        store.close()

    def labels(page: str) -> tuple[set[str], set[str], set[str]]:
        found = [s.labels for f in text_string_to_metric_families(page) for s in f.samples
                 if s.name == "DCGM_FI_DEV_GPU_UTIL"]  # fmt: skip
        return ({x["DCGM_FI_DRIVER_VERSION"] for x in found}, {x["modelName"] for x in found},
                {x["gpu"] for x in found})  # fmt: skip

    (before,), (model_name,), gpus = labels(pages[0])
    (after,), _, _ = labels(pages[1])
    assert before != after == "575.57.08"
    assert [(r["gpu_driver_version"], r["gpu_model"], r["gpu_count"]) for r in rows] == [
        (before, model_name, len(gpus)), (after, model_name, len(gpus))
    ]  # fmt: skip
    changed = [k for k in (*DIGEST_FIELDS, *GPU_FIELDS) if rows[0][k] != rows[1][k]]
    assert changed == ["gpu_driver_version"]
    for r in rows:
        known = {k: r[k] for k in GPU_FIELDS if r[k] is not None}
        assert r["fingerprint"] == _sha({**{k: r[k] for k in DIGEST_FIELDS}, **known})


def test_an_endpoint_without_a_gpu_exporter_keeps_todays_digest(tmp_path: Path) -> None:
    """The stored digest of an endpoint without a GPU exporter is the documented twelve-field one
    it had before the GPU fields existed, so an upgrade starts no new ``deployments`` row."""
    with running_simulator(**FAST) as sim:
        doc = config_doc(tmp_path, 9464)
        doc["endpoints"][0]["base_url"] = sim.base_url
        (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
        model = load_model(tmp_path / "m.yaml")
        upgrade(model.storage.url)
        store, exporter = Store(model.storage.url), Exporter(model)
        jobs = Jobs(model, store, exporter)

        async def run() -> None:
            await jobs.scrape(model.endpoints[0])
            await jobs.close()

        asyncio.run(run())
        with store.session() as session:
            (row,) = session.scalars(select(DeploymentRow)).all()
            digest, fields = row.fingerprint, {k: getattr(row, k) for k in DIGEST_FIELDS}
            gpu = [getattr(row, k) for k in GPU_FIELDS]
        store.close()
    assert fields["vllm_version"] is not None and fields["block_size"] == 128  # the simulator was read
    assert gpu == [None] * 4
    assert digest == _sha(fields)
