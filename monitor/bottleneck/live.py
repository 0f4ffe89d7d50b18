"""The service's running verdict: the last window of each class's probes and its pools' intervals.

:class:`LiveWindows` keeps, in memory and bounded by time, what :func:`~monitor.bottleneck.
evidence.gather` reads: each answered probe run as a :class:`~monitor.bottleneck.tail.Sample`
(its own server view, per-request metrics; a probe without one is not attributed here, the
report joins its spans), every run's retry count, and each endpoint's scrape intervals (two
windows, the earlier one being the prefix-hit baseline). :meth:`LiveWindows.verdict` decides
each class from the class's endpoints' intervals and latest GPU signals.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.rules import Verdict, decide
from monitor.bottleneck.tail import SOURCE_METRICS, Sample
from monitor.events import MONITOR, UNANSWERED
from monitor.model import Model
from monitor.probes.metrics import stage_seconds
from monitor.probes.result import ProbeResult
from monitor.scrape.gpu_signals import GpuSignals
from monitor.scrape.signals import Signals

#: The verdict's window: long enough for MIN_REQUESTS probe runs of a class probed every 30 s.
WINDOW = 15 * 60.0
#: Kinds whose runs loop through tools (their time outside the server is the application's).
TOOL_KINDS = frozenset({"agent_session"})
SERVER_STAGES = ("queue", "prefill", "decode")


def sample_of(result: ProbeResult) -> Sample | None:
    """An answered run's stages as a tail sample (None for a run the service did not answer)."""
    if result.reason in (*UNANSWERED, *MONITOR):
        return None
    t = result.timings
    parts = stage_seconds(t)
    view = SOURCE_METRICS if any(p in parts for p in SERVER_STAGES) else None
    return Sample(result.request_class, result.completed_at, parts, view, t.ttft, t.e2e)


class LiveWindows:
    """Samples, run counts and intervals of the last windows (O(window) memory per class/endpoint)."""

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self.samples: dict[str, deque[Sample]] = {}
        self.runs: dict[str, deque[tuple[float, bool]]] = {}  # class -> (completed at, retried)
        self.intervals: dict[str, deque[Signals]] = {}

    def probe(self, result: ProbeResult) -> None:
        at = result.completed_at
        runs = self.runs.setdefault(result.request_class, deque())
        runs.append((at, bool(result.timings.retries)))
        while runs and runs[0][0] <= at - self.window:
            runs.popleft()
        sample = sample_of(result)
        if sample is not None:
            rows = self.samples.setdefault(result.request_class, deque())
            rows.append(sample)
            while rows and rows[0].at <= at - self.window:
                rows.popleft()

    def scrape(self, signals: Signals) -> None:
        rows = self.intervals.setdefault(signals.endpoint, deque())
        rows.append(signals)
        while rows and rows[0].end <= signals.end - 2 * self.window:
            rows.popleft()

    def forget(self, endpoint: str) -> None:
        self.intervals.pop(endpoint, None)

    def verdict(self, model: Model, cls: str, gpus: Mapping[str, GpuSignals], now: float) -> Verdict:
        """Class ``cls``'s verdict over (now - window, now]."""
        rc = model.request_class(cls)
        names = [e.name for e in model.endpoints_for(cls)]
        runs = [r for r in self.runs.get(cls, ()) if now - self.window < r[0] <= now]
        evidence = gather(
            cls,
            now,
            self.window,
            list(self.samples.get(cls, ())),
            [s for n in names for s in self.intervals.get(n, ())],
            [gpus[n] for n in names if n in gpus],
            runs=len(runs),
            retried=sum(1 for _, retried in runs if retried),
            tools=bool(TOOL_KINDS & set(rc.probe.kinds)),
        )
        return decide(evidence)
