"""The checks every peer run passes before anything is stored, whichever tool wrote it.

Each importer (:mod:`~monitor.contract.peers.vllm_bench`, :mod:`~monitor.contract.peers.guidellm`,
:mod:`~monitor.contract.peers.aiperf`) maps its file to :class:`PeerRun` values without
repairing anything; :func:`check_run` then refuses, with one :class:`FormatError` naming the
figure, a run that cannot be a measurement:

* a time, count, throughput, token size or load that is NaN, infinite or negative; a per-request
  value (TTFT, TPOT, ITL, e2e, stall) or a reported percentile, mean, minimum or maximum that is
  NaN, infinite or negative (vLLM's TPOT is ``(e2e - TTFT) / (output tokens - 1)``: an e2e shorter
  than its TTFT gives a negative one); percentiles that decrease as the percentile rises;
* a duration that is not above zero;
* a start before :data:`EARLIEST` or an end more than :data:`FUTURE_SKEW` after now. vLLM and
  AIPerf write local time without a zone, read here in the importing machine's zone, so a file
  written at UTC+14 and imported at UTC−12 reads 26 h "later" than it was; beyond that the date
  is wrong.
"""

from __future__ import annotations

import itertools
import math
import time
from datetime import UTC, datetime

from monitor.contract.peers.model import FormatError, PeerRun, Quantiles

#: No run of an LLM serving benchmark of these tools predates 2020.
EARLIEST = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
#: The widest gap between two time zones (UTC+14 and UTC−12): how far ahead a local time without a
#: zone, read in another zone, can look.
FUTURE_SKEW = 26 * 3600.0


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _figure(value: float | None, what: str, *, positive: bool = False, unit: str = "") -> None:
    if value is None:
        return
    if not math.isfinite(value):
        raise FormatError(f"{what} is {value!r}, expected a finite number")
    if value < 0 or (positive and value == 0):
        raise FormatError(f"{what} is {value:g}{unit}, expected a number {'> 0' if positive else '>= 0'}")


def _samples(metric: str, values: list[float]) -> None:
    for i, v in enumerate(values):
        _figure(v, f"per-request {metric} value {i + 1} of {len(values)}", unit=" s")


def _quantiles(metric: str, q: Quantiles) -> None:
    points = sorted(q.points.items())
    for p, v in points:
        _figure(v, f"the {metric} P{p:g}", unit=" s")
    for name, extra in (("mean", q.mean), ("minimum", q.minimum), ("maximum", q.maximum)):
        _figure(extra, f"the {metric} {name}", unit=" s")
    for (p0, v0), (p1, v1) in itertools.pairwise(points):
        if v1 < v0 - 1e-12 * max(abs(v0), 1.0):
            raise FormatError(f"{metric} P{p1:g} ({v1:g} s) is below P{p0:g} ({v0:g} s): percentiles fall")


def _dates(run: PeerRun, now: float) -> None:
    if run.started_at < EARLIEST:
        raise FormatError(f"the run started {_when(run.started_at)}, before 2020: the date is wrong")
    end = run.started_at + run.duration
    if end > now + FUTURE_SKEW:
        raise FormatError(f"the run ended {_when(end)}, after now ({_when(now)}): the date is wrong")


def check_run(run: PeerRun, now: float | None = None) -> PeerRun:
    """``run`` unchanged when it can be a measurement; :class:`FormatError` naming what cannot."""
    _figure(run.duration, "the duration", positive=True, unit=" s")
    figures = {
        "the start time": run.started_at, "the request throughput": run.request_throughput,
        "the output throughput": run.output_throughput,
        "the total token throughput": run.total_token_throughput,
        "the mean prompt tokens": run.prompt_tokens, "the mean output tokens": run.output_tokens,
        "the completed count": float(run.completed), "the failed count": float(run.failed),
        "the incomplete count": float(run.incomplete),
    }  # fmt: skip
    for what, v in figures.items():
        _figure(v, what)
    if run.load_value is not None:
        _figure(run.load_value, f"the load ({run.load_kind})", positive=True)
    _dates(run, time.time() if now is None else now)
    for metric, values in run.samples.items():
        _samples(metric, values)
    for metric, q in run.quantiles.items():
        _quantiles(metric, q)
    return run
