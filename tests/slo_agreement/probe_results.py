"""A scenario's probe runs as the real :class:`~monitor.probes.result.ProbeResult` objects.

Answered runs carry their timings (ITL samples come from the real
:func:`monitor.probes.timing.itl_samples` over a transcript of the run's chunks). A timed-out run
looks like the runner's timeout result (``e2e`` = the time until the timeout); a crashing run is
produced by the real runner (:func:`monitor.probes.runner.run_probe`) around a prober that raises,
then placed at the scenario's times. ``finished_at`` is set when ``ProbeResult`` has that field.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import httpx

from monitor.model import Model
from monitor.probes.result import ProbeResult, Timings, Usage
from monitor.probes.runner import plan_round, run_probe
from monitor.probes.target import ProbeSpec, Target
from monitor.probes.timing import chunk_gaps, itl_samples
from monitor.probes.transcript import TokenChunk, Transcript
from tests.slo_agreement.config import MODEL_ID
from tests.slo_agreement.oracle import UNANSWERED
from tests.slo_agreement.streams import CRASH, ProbeRun, Scenario

Results = list[tuple[float, ProbeResult]]  # (completion, seconds after the start; result), in that order
HAS_FINISHED_AT = "finished_at" in {f.name for f in dataclasses.fields(ProbeResult)}


def _transcript(run: ProbeRun) -> Transcript:
    assert run.ttft is not None
    at, chunks = run.ttft, [TokenChunk(run.ttft, "answer", 1)]
    for gap, k in run.chunks:
        at += gap
        chunks.append(TokenChunk(at, "answer", k))
    return Transcript(chunks=chunks)


def _timings(run: ProbeRun) -> Timings:
    if run.category in UNANSWERED:
        # What the runner / prober knows of an unanswered run; a broken stream may have had a token.
        return Timings(ttft=run.ttft if run.category == "stream_broken" else None, e2e=run.duration)
    transcript = _transcript(run) if run.chunks else Transcript()
    samples, gaps = itl_samples(transcript), chunk_gaps(transcript, 0.0)
    mean = sum(samples) / len(samples) if samples else None
    return Timings(ttft=run.ttft, ttft_answer=run.ttft, itl_samples=samples, itl_mean=mean, tpot=run.tpot,
                   e2e=run.duration, server_queue=run.queue, chunk_gaps=gaps)  # fmt: skip


def _extra(run: ProbeRun) -> dict[str, float]:
    """The long-prompt probe's cold and warm TTFT, as the prober reports them."""
    pairs = (("cold_ttft", run.cold), ("warm_ttft", run.warm))
    return {k: v for k, v in pairs if v is not None and run.category not in UNANSWERED}


def _placed(result: ProbeResult, t0: float, run: ProbeRun) -> ProbeResult:
    changes: dict[str, Any] = {"started_at": t0 + run.start}
    if HAS_FINISHED_AT:
        changes["finished_at"] = t0 + run.end
    return dataclasses.replace(result, **changes)


async def _raise(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    raise RuntimeError("prober bug (agreement scenario)")


def crashed(model: Model, scn: Scenario, run: ProbeRun, t0: float) -> ProbeResult:
    """What the real runner makes of a prober that raises."""
    (planned,) = plan_round(model, [scn.name], [run.kind])
    result = asyncio.run(run_probe(planned, None, prober=_raise))  # type: ignore[arg-type]
    return _placed(result, t0, run)


def probe_result(model: Model, scn: Scenario, run: ProbeRun, t0: float) -> ProbeResult:
    if run.category == CRASH:
        return crashed(model, scn, run, t0)
    answered = run.category not in UNANSWERED
    result = ProbeResult(
        endpoint=scn.endpoint(scn.pools[0].name),
        request_class=scn.name,
        kind=run.kind,
        started_at=t0 + run.start,
        reason=run.category,
        timings=_timings(run),
        usage=Usage(prompt_tokens=12, completion_tokens=1 + sum(k for _, k in run.chunks))
        if answered
        else Usage(),
        model=MODEL_ID if answered else None,
        finish_reason="stop" if answered else None,
        status_code=200 if answered else None,
        detail="" if run.category is None else f"scenario: {run.category}",
        extra=_extra(run),
    )
    return _placed(result, t0, run)


def probe_results(model: Model, scn: Scenario, t0: float) -> Results:
    """(completion, result) of every run (completion in seconds after the start), in that order."""
    ordered = sorted(scn.probes, key=lambda r: (r.end, r.start))
    return [(run.end, probe_result(model, scn, run, t0)) for run in ordered]
