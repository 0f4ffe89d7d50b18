"""What a probe run had done when its timeout cut it off: its trace and its first request.

The runner bounds each prober with :func:`asyncio.wait_for`, which cancels it at the timeout and
so loses everything the prober knew. Two facts of such a run are recorded here as they happen,
for the ``timeout`` result the runner writes instead:

* its **trace id**: the server's span of the request the monitor gave up on (a server that
  reports aborted requests sends one) is then known as the probe's, and left out of real
  traffic's figures (docs/slo-events.md: the run is counted once, by the probe SLIs);
* its **TTFT** when a first token had arrived: shown with the failure (a stream cut after its
  first token, not a server that never answered); an unanswered run has no latency event, so it
  feeds no SLI.

The holder travels in a :class:`~contextvars.ContextVar` set by the runner; the task
:func:`asyncio.wait_for` creates copies the context, so the prober's writes reach the runner.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from monitor.probes.result import Timings


class _Request(Protocol):
    def timings(self) -> Timings: ...


@dataclass
class Progress:
    """The trace id of the run's span and its first request (:class:`~monitor.probes.exchange.Exchange`)."""

    trace_id: str | None = None
    first_request: _Request | None = None

    def ttft(self) -> float | None:
        """The first request's time to first token, if a token had arrived."""
        return self.first_request.timings().ttft if self.first_request is not None else None


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
    if progress is not None and progress.first_request is None:
        progress.first_request = request
