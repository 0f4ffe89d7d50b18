"""A stalled stream's gaps on the exporter (``m3mon_probe_chunk_gap_seconds``) and in the stored record.

The real simulator (2 ms decode steps, no jitter, no speculative decoding) with its
``stream_stall`` fault pauses the stream 0.6 s after its 4th chunk. Expectations come from the
simulator's ground truth (``/sim/truth``: when it wrote each chunk) and the documented
definitions (docs/probes.md "Chunk gaps"), not from the code under test:

* one gap per pair of consecutive chunks: as many gaps as the server's writes − 1;
* exactly one gap above 0.5 s (the injected 0.6 s + one decode step), every other far below;
* per-token ITL samples: the simulator sends no running usage, so *k* = completion tokens /
  chunks (the stream's mean) and each gap gives round(*k*) samples of *g*/*k*; stored as a
  histogram on 1 ms × 1.2^i edges;
* the stall record: the longest gap's size, its start (s after send) and the tokens before it.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from monitor.model import Model, load_model
from monitor.probes.metrics import ProbeMetrics
from monitor.probes.result import ProbeResult
from monitor.probes.runner import plan_round, run_probe
from monitor.sim.harness import SimHandle, running_simulator
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op
from monitor.store.tables import ProbeResultRow
from tests.probes.conftest import write_config

pytestmark = pytest.mark.timeout(60)

STALL = 0.6
SETTINGS = {"decode_itl": 0.002, "jitter": 0.0, "max_model_len": 4096, "prefill_tps": 2_000_000.0,
            "reasoning_tokens": 30, "answer_tokens": (6, 10), "spec_tokens": 0}  # fmt: skip
GAP = "m3mon_probe_chunk_gap_seconds"


@pytest.fixture(scope="module")
def stalled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Model, ProbeResult, dict[str, Any]]]:
    """One reasoning probe through a stalled stream, and the simulator's truth of its timed request."""
    with running_simulator(**SETTINGS) as sim:  # type: ignore[arg-type]
        model = load_model(write_config(tmp_path_factory.mktemp("gaps") / "m.yaml", sim.base_url,
                                        kinds="[reasoning]"))  # fmt: skip
        yield model, _probe(model, sim), sim.truth()["requests"][0]  # the "enabled" run is timed


def _probe(model: Model, sim: SimHandle) -> ProbeResult:
    sim.set_faults(stream_stall=STALL)
    (planned,) = plan_round(model, kinds=["reasoning"])

    async def go() -> ProbeResult:
        async with httpx.AsyncClient() as client:
            return await run_probe(planned, client)

    result = asyncio.run(go())
    assert result.ok, result.detail
    return result


def _server_gaps(truth: dict[str, Any]) -> list[float]:
    sent = truth["sent_times"]["mono"]
    return [b - a for a, b in itertools.pairwise(sent)]


def test_chunk_gap_histogram_on_the_exporter(stalled: tuple[Model, ProbeResult, dict[str, Any]]) -> None:
    model, result, truth = stalled
    registry = CollectorRegistry()
    ProbeMetrics.for_model(registry, model).observe(result)
    labels = {"endpoint": "sim", "class": "small", "kind": "reasoning"}
    series = {(s.name, s.labels.get("le")): s.value for m in registry.collect() if m.name == GAP
              for s in m.samples if labels.items() <= s.labels.items()}  # fmt: skip
    gaps = len(_server_gaps(truth))
    assert gaps >= 4
    assert series[(f"{GAP}_count", None)] == gaps
    assert series[(f"{GAP}_bucket", "0.5")] == gaps - 1  # every gap but the stall
    assert series[(f"{GAP}_bucket", "0.75")] == series[(f"{GAP}_bucket", "+Inf")] == gaps
    assert STALL <= series[(f"{GAP}_sum", None)] < STALL + 0.15


def _row(model: Model, result: ProbeResult, db: Path) -> ProbeResultRow:
    url = f"sqlite:///{db}"
    upgrade(url)
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints), probe_op(model, result)])
        with store.session() as s:
            (row,) = s.scalars(select(ProbeResultRow)).all()
            s.expunge(row)
            return row
    finally:
        store.close()


def test_stored_itl_histogram_and_stall_record(
    stalled: tuple[Model, ProbeResult, dict[str, Any]], tmp_path: Path
) -> None:
    model, result, truth = stalled
    row = _row(model, result, tmp_path / "gaps.db")
    server = _server_gaps(truth)
    chunks = len(server) + 1
    mean_k = truth["completion_tokens"] / chunks
    k = max(1, round(mean_k))
    (j,) = [i for i, g in enumerate(server) if g > 0.5]  # the injected stall
    # the ITL histogram: round(k) samples per gap; the stall's of ~0.6/k in the bucket 1 ms × 1.2^i
    hist = row.itl_histogram
    assert hist is not None and sum(hist.values()) == k * len(server)
    # (its bucket, or the next when the client saw the gap a little longer than the server wrote it)
    i = next(i for i in range(65) if 0.001 * 1.2**i >= server[j] / mean_k)
    edges = (0.001 * 1.2**i, 0.001 * 1.2 ** (i + 1))
    stall_bucket = {key: n for key, n in hist.items()
                    if any(math.isclose(float(key), e, rel_tol=1e-3) for e in edges)}  # fmt: skip
    assert list(stall_bucket.values()) == [k], (hist, edges)
    assert all(float(key) < 0.05 for key in hist if key not in stall_bucket)
    # the stall record: size, start after send, tokens before it
    stall = row.extra["timings"]["stall"]
    assert stall["tokens"] == k and stall["before"] == k * (j + 1)
    assert server[j] - 0.01 <= stall["seconds"] < server[j] + 0.05
    start = truth["sent_times"]["mono"][j] - truth["received"]["mono"]
    assert start - 0.02 <= stall["at"] <= start + 0.05
