"""The contract's per-run table: every stored run of a class, ``m3mon replay`` runs and imported
peer runs (``vllm bench serve``, GuideLLM, AIPerf) side by side, with their percentiles.

The figures are the stored summary's, computed once when the run was stored: nearest rank over
per-request values (``m3mon replay``; a peer file with per-request values), or the tool's own
quantiles when the file has only those (``basis``). Nothing is recomputed here and nothing is
computed by the renderer (:mod:`monitor.contract.render`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.store.replays import StoredRun

#: Runs shown per class, the newest; older ones are counted (``ClassContract.runs_total``).
SHOWN_RUNS = 12
REPLAY_SOURCE = "m3mon replay"
#: The (metric, percentile) columns of the table, in order.
COLUMNS = (("ttft", 50), ("ttft", 95), ("ttft", 99), ("tpot", 50), ("tpot", 95), ("e2e", 95))


@dataclass(frozen=True)
class RunFigures:
    """One stored run's row: where it came from, its load and outcome, its percentiles (seconds)."""

    run_id: int
    source: str  # "m3mon replay", or the peer tool and its version ("vllm bench serve 0.32.0")
    load: str  # "rate 4", "concurrency 8", "burst (every request at once)"
    started_at: float
    succeeded: int
    requests: int
    request_throughput: float | None  # completed requests per second
    basis: str  # "per-request values" or "quantiles only"
    percentiles: dict[str, float | None]  # "ttft_p95" -> seconds, one key per COLUMNS entry
    counted: str  # "yes", or why the contract does not count it


def _source(summary: dict[str, Any]) -> tuple[str, str]:
    src = summary.get("source")
    if not isinstance(src, dict):
        return REPLAY_SOURCE, "per-request values"
    tool = str(src.get("tool") or "imported")
    version = src.get("version")
    return (f"{tool} {version}" if version else tool), str(src.get("basis") or "quantiles only")


def _counted(run: StoredRun, digest: str | None) -> str:
    if run.not_evidence is not None:
        return "no: not evidence (see notes)"
    if run.fingerprint_digest != digest:
        return f"no: deployment {(run.fingerprint_digest or '-')[:12]}"
    return "yes"


def _figure(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def figures(run: StoredRun, digest: str | None) -> RunFigures:
    """The row of ``run``; ``digest`` is the current deployment's fingerprint digest."""
    s = run.summary
    source, basis = _source(s)
    stored = s.get("percentiles")
    pct: dict[str, Any] = stored if isinstance(stored, dict) else {}
    # a metric the run has no figure for (e.g. a file without it) is None
    values = {f"{m}_p{p}": _figure((pct.get(m) or {}).get(f"p{p}")) for m, p in COLUMNS}
    return RunFigures(
        run_id=run.id,
        source=source,
        load=run.load_label,
        started_at=run.started_at,
        succeeded=int(s.get("succeeded") or 0),
        requests=int(s.get("requests") or 0),
        request_throughput=_figure(s.get("request_throughput")),
        basis=basis,
        percentiles=values,
        counted=_counted(run, digest),
    )


def run_table(stored: list[StoredRun], digest: str | None) -> tuple[RunFigures, ...]:
    """The newest :data:`SHOWN_RUNS` of ``stored`` (oldest first), as rows."""
    return tuple(figures(r, digest) for r in stored[-SHOWN_RUNS:])
