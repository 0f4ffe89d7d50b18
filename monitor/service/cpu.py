"""CPU time by kind of work: ``m3mon_job_cpu_seconds_total{kind}``.

The service runs its asynchronous jobs (scrape, health, probe) as steps of asyncio tasks on one
thread and its blocking work (store writes, evaluation, pruning) in worker threads, so process CPU
alone cannot say which job costs what. :class:`JobCPU` measures both, with the calling thread's own
CPU clock (``time.thread_time``, which other threads' work does not advance):

* :meth:`JobCPU.run` awaits a job's coroutine one step at a time and adds each step's thread CPU
  to its kind. The kind is also set in a context variable, which every task the job starts
  inherits; the loop's task factory (:meth:`JobCPU.install`) wraps those tasks' coroutines the same
  way, so a probe round's concurrent probes count as ``probe``. Each step runs on the loop's thread
  and nothing else runs there meanwhile, so a step's CPU is that job's.
* :meth:`JobCPU.call` runs a function (in a worker thread) and adds that thread's CPU to a kind.

Not attributed: work outside any task step (the selector, transport read callbacks, timers) and
the HTTP surface (``/metrics``); ``process_cpu_seconds_total`` minus the sum is that remainder.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar, cast

from prometheus_client import CollectorRegistry, Counter

from monitor import conventions as cv

T = TypeVar("T")

_KIND: contextvars.ContextVar[str | None] = contextvars.ContextVar("m3mon_job_kind", default=None)


def kind_of(task: str) -> str:
    """The ``kind`` of a scheduler task id: ``scrape:<endpoint>`` -> ``scrape``."""
    return task.split(":", 1)[0]


@types.coroutine
def _stepped(awaitable: Awaitable[T], add: Callable[[float], None]) -> Generator[Any, Any, T]:
    """Await ``awaitable``, adding the thread CPU of each of its steps with ``add``."""
    steps = awaitable.__await__()
    advance: Callable[[Any], Any] = steps.send
    value: Any = None
    while True:
        start = time.thread_time()
        try:
            signal = advance(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        finally:
            add(time.thread_time() - start)
        try:
            value, advance = (yield signal), steps.send
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as exc:  # cancellation and other throws go to the inner coroutine
            value, advance = exc, steps.throw


class JobCPU:
    """The ``m3mon_job_cpu_seconds_total{kind}`` counter and the means to fill it."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.seconds = Counter(
            cv.JOB_CPU.removesuffix("_total"),
            "CPU seconds spent on each kind of work: its tasks' event-loop steps and worker-thread calls.",
            [cv.L_KIND],
            registry=registry,
        )
        self._add = {kind: self.seconds.labels(kind).inc for kind in cv.JOB_KINDS}

    def adder(self, kind: str) -> Callable[[float], None]:
        add = self._add.get(kind)
        if add is None:
            add = self._add[kind] = self.seconds.labels(kind).inc
        return add

    async def run(self, kind: str, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` as ``kind`` work (tasks it starts included)."""
        token = _KIND.set(kind)
        try:
            return await _stepped(awaitable, self.adder(kind))
        finally:
            _KIND.reset(token)

    def call(self, kind: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, adding the calling thread's CPU to ``kind``."""
        start = time.thread_time()
        try:
            return fn(*args)
        finally:
            self.adder(kind)(time.thread_time() - start)

    def install(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
        """Make ``loop`` account the tasks that jobs start; returns what undoes it."""
        previous = loop.get_task_factory()

        def factory(
            loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kw: Any
        ) -> asyncio.Future[Any]:
            kind = kw["context"].get(_KIND) if kw.get("context") is not None else _KIND.get()
            if kind is not None:
                coro = self._counted(kind, coro)
            if previous is not None:
                return previous(loop, coro, **kw)
            return asyncio.Task(coro, loop=loop, **kw)

        loop.set_task_factory(cast(Any, factory))  # typeshed's factory takes no context keyword
        return lambda: loop.set_task_factory(previous)

    async def _counted(self, kind: str, coro: Coroutine[Any, Any, T]) -> T:
        return await _stepped(coro, self.adder(kind))
