"""``m3mon contract --import FILE --class C [--endpoint E]``: peer benchmark results as replay runs.

Each run in FILE (``vllm bench serve --save-result`` JSON, GuideLLM's JSON report, AIPerf's
``profile_export_aiperf.json``) is judged against class C's SLOs and stored as a replay run with
the endpoint's fingerprint observed now (monitor/contract/peers). One line per stored run; a run
that is no evidence is also named on stderr and makes the command exit 1. A file that is not one
of these formats, whose figures cannot be a measurement, or whose model or target is not the
endpoint's (unless ``--accept-foreign-model`` / ``--accept-foreign-target``) is one line on stderr,
exit 2, nothing stored.
"""

from __future__ import annotations

import sys
from typing import Any

from monitor.model import Model


def _load(kind: str, value: float | None) -> str:
    if kind == "burst" or value is None:
        return "a burst (every request at once)"
    return f"rate {value:g}/s" if kind == "rate" else f"concurrency {value:g}"


def line(imp: Any) -> str:
    """``imported run 7: vllm bench serve at rate 4/s, 24 completed, 0 failed, per-request values:
    SLOs hold``, and why it is no evidence when it is not."""
    run = imp.run
    verdict = {True: "SLOs hold", False: "an SLO fails", None: "no SLO judged"}[imp.meets_slos]
    text = (
        f"imported run {imp.run_id}: {run.tool} at {_load(run.load_kind, run.load_value)}, "
        f"{run.completed} completed, {run.failed} failed, {run.basis}: {verdict}"
    )
    if imp.accepted:
        text += f"; accepted as the endpoint's: {'; '.join(imp.accepted)}"
    if imp.not_evidence is not None:
        text += f"; not evidence: {imp.not_evidence} (stored as a failed run; the contract ignores it)"
    return text


def import_runs(
    model: Model, files: list[str], classes: list[str] | None, endpoint: str | None, accept: frozenset[str]
) -> int:
    """Import every file (all parsed and admitted before any is stored); 1 when a stored run is no
    evidence. ``accept``: the foreign facts ("model", "target") the operator accepts."""
    from monitor.cli.contract import class_and_endpoint
    from monitor.contract.peers.detect import read_peer_file
    from monitor.contract.peers.store import Observed, admit, import_file
    from monitor.errors import UsageError
    from monitor.store.store import Store

    if not classes or len(classes) != 1:
        raise UsageError("--import needs exactly one --class: the class whose traffic the file measured")
    rc, ep = class_and_endpoint(model, classes[0], endpoint)
    peers = [read_peer_file(f) for f in files]
    seen = Observed.now(ep)
    admitted = [admit(peer, seen.identity, accept) for peer in peers]
    db = Store(model.storage.url)
    status = 0
    try:
        db.check_schema()
        for peer, accepted in zip(peers, admitted, strict=True):
            for imp in import_file(db, peer, ep, rc, seen, accepted):
                print(line(imp))
                if imp.not_evidence is not None:
                    print(f"m3mon contract: imported run {imp.run_id} is not evidence: {imp.not_evidence}",
                          file=sys.stderr)  # fmt: skip
                    status = 1
    finally:
        db.close()
    print()
    return status
