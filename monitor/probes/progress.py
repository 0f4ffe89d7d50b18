"""What a probe run had done when its timeout cut it off: its trace and its first request.

The runner bounds each prober with :func:`asyncio.wait_for`, which cancels it at the timeout and
so loses everything the prober knew. Two facts of such a run are recorded here as they happen,
for the ``timeout`` result the runner writes instead:

* its **trace id**: the server's span of the request the monitor gave up on (a server that
  reports aborted requests sends one) is then known as the probe's, and left out of real
  traffic's figures (docs/slo-events.md: the run is counted once, by the probe SLIs);
* its **TTFT** when a first token had arrived (of its first request that got one: a retried
  attempt's, a long-prompt probe's cold request): shown with the failure (a stream cut after its
  first token, not a server that never answered); an unanswered run has no latency event, so it
  feeds no SLI.

The holder travels in a :class:`~contextvars.ContextVar` set by the runner; the task
:func:`asyncio.wait_for` creates copies the context, so the prober's writes reach the runner.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from monitor.probes.result import Timings


class _Request(Protocol):
    def timings(self) -> Timings: ...


@dataclass
class Progress:
    """The trace id of the run's span and its requests (:class:`~monitor.probes.exchange.Exchange`)."""

    trace_id: str | None = None
    requests: list[_Request] = field(default_factory=list)

    def ttft(self) -> float | None:
        """The time to first token of the first request that got one (None: no token arrived)."""
        return next((t for r in self.requests if (t := r.timings().ttft) is not None), None)


_current: ContextVar[Progress | None] = ContextVar("m3mon_probe_progress", default=None)


@contextmanager
def recording() -> Iterator[Progress]:
    """A fresh :class:`Progress` that the probe run in this context writes to."""
    progress = Progress()
    token = _current.set(progress)
    try:
        yield progress
    finally:
        _current.reset(token)


def note_trace(trace_id: str | None) -> None:
    progress = _current.get()
    if progress is not None and progress.trace_id is None:
        progress.trace_id = trace_id


def note_request(request: _Request) -> None:
    progress = _current.get()
    if progress is not None:
        progress.requests.append(request)
