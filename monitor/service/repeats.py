"""Repeated warnings logged once, then counted: a :class:`logging.Filter` on the log handlers.

A warning (or error) is *the same* as an earlier one when it comes from the same logger, at the
same level, with the same message template and text arguments (an endpoint's name, an error's
text) and the same logged exception (type and text, if any); numeric arguments (a count, a
duration) do not make it different. The first one is logged; the repeats are counted, not
logged, except one every :data:`SUMMARY_EVERY` seconds, which carries how many were held back
("... [repeated 37 times in the last 10 min]"). When a warning has not come back for
:data:`QUIET_GAPS` times the gap between its last two occurrences (at least :data:`QUIET_MIN`
seconds), :meth:`RepeatFilter.sweep` logs one line saying it stopped and how often it came since
it was last logged; at shutdown :meth:`RepeatFilter.flush` does the same for every warning still
repeating.

The counts are exposed by :class:`RepeatCollector` as ``m3mon_log_warnings_total`` (every
warning, logged or not) and ``m3mon_log_warnings_suppressed_total`` (those held back), labelled
by ``logger`` and ``kind``: the ``kind`` a call site gives (``extra={"kind": ...}``), else the
name of the function that logged it. Neither label carries the message, so both stay bounded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from monitor import conventions as cv

#: A repeated warning is logged again (with its count) at most this often, in seconds.
SUMMARY_EVERY = 600.0
#: A warning is over when it stayed away this many times its last gap ...
QUIET_GAPS = 3.0
#: ... and at least this many seconds.
QUIET_MIN = 5.0
#: Distinct warnings followed at once; beyond it the oldest finished ones are forgotten first.
MAX_KEYS = 1000
#: The logger of the summary and "stopped" lines (raised to INFO by monitor.service.logs).
log = logging.getLogger(__name__)
_DECIDED = "m3mon_repeat_decision"
_OWN = "m3mon_repeat_summary"

Key = tuple[str, int, str, tuple[str, ...]]


@dataclass
class _Seen:
    message: str
    first: float
    last: float
    gap: float = 0.0
    held: int = 0  # repeats held back since the warning was last logged
    logged_at: float = 0.0


class RepeatFilter(logging.Filter):
    """Logs the first of each warning and counts the rest (see the module's docstring)."""

    def __init__(self, summary_every: float = SUMMARY_EVERY, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.summary_every, self.clock = summary_every, clock
        self.seen: dict[Key, _Seen] = {}
        self.warnings: dict[tuple[str, str], int] = {}  # (logger, kind) -> every warning
        self.suppressed: dict[tuple[str, str], int] = {}  # (logger, kind) -> those held back
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        decided = getattr(record, _DECIDED, None)  # one decision per record, however many handlers
        if decided is None:
            decided = self._decide(record)
            setattr(record, _DECIDED, decided)
        return bool(decided)

    def _decide(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or getattr(record, _OWN, False):
            return True
        now = self.clock()
        key, labels = _key(record), (record.name, kind_of(record))
        with self._lock:
            self.warnings[labels] = self.warnings.get(labels, 0) + 1
            seen = self.seen.get(key)
            if seen is None:
                self._forget_some()
                self.seen[key] = _Seen(record.getMessage(), now, now, logged_at=now)
                return True
            seen.gap, seen.last = now - seen.last, now
            if now - seen.logged_at < self.summary_every:
                seen.held += 1
                self.suppressed[labels] = self.suppressed.get(labels, 0) + 1
                return False
            held, since = seen.held, now - seen.logged_at
            seen.held, seen.logged_at = 0, now
        if held:
            record.msg, record.args = (
                f"{record.getMessage()} [repeated {held} times in the last {_span(since)}]",
                None,
            )
        return True

    def _forget_some(self) -> None:
        while len(self.seen) >= MAX_KEYS:
            del self.seen[min(self.seen, key=lambda k: self.seen[k].last)]

    def sweep(self) -> None:
        """Log "stopped" for every warning that has stayed away long enough, and forget it."""
        now = self.clock()
        with self._lock:
            over = [k for k, s in self.seen.items() if now - s.last >= max(QUIET_MIN, QUIET_GAPS * s.gap)]
            ended = [(k, self.seen.pop(k)) for k in over]
        for k, s in ended:
            if s.first != s.last:  # it repeated: say it is over
                _note(k, f"stopped repeating: {s.message} [last seen {_span(now - s.last)} ago; "
                         f"{s.held} repeats since last logged]")  # fmt: skip

    def flush(self) -> None:
        """At shutdown: one line for every warning still held back."""
        with self._lock:
            pending = [(k, s) for k, s in self.seen.items() if s.held]
            self.seen.clear()
        for k, s in pending:
            span = _span(s.last - s.logged_at)
            _note(k, f"held back until shutdown: {s.message} [repeated {s.held} times in the last {span}]")


def _note(key: Key, text: str) -> None:
    log.info("%s: %s", key[0], text, extra={_OWN: True})


def _key(record: logging.LogRecord) -> Key:
    args = record.args if isinstance(record.args, tuple) else ((record.args,) if record.args else ())
    words = tuple(str(a) for a in args if not isinstance(a, int | float))
    exc = record.exc_info[1] if record.exc_info else None
    if exc is not None:  # another exception under the same message is news
        words += (type(exc).__name__, str(exc))
    return record.name, record.levelno, str(record.msg), words


def kind_of(record: logging.LogRecord) -> str:
    """The ``kind`` label of a warning: the call site's ``extra={"kind": ...}``, else its function."""
    kind = getattr(record, "kind", None)
    return kind if isinstance(kind, str) and kind else record.funcName


def _span(seconds: float) -> str:
    if seconds >= 90:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


class RepeatCollector(Collector):
    """The filter's counts as ``m3mon_log_warnings_total`` and ``m3mon_log_warnings_suppressed_total``."""

    def __init__(self, repeats: RepeatFilter) -> None:
        self.repeats = repeats

    def collect(self) -> Iterator[CounterMetricFamily]:
        for name, doc, counts in (
            (cv.LOG_WARNINGS, "Warnings and errors logged or held back, by logger and kind.",
             self.repeats.warnings),
            (cv.LOG_WARNINGS_SUPPRESSED, "Repeated warnings held back (counted, not logged).",
             self.repeats.suppressed),
        ):  # fmt: skip
            family = CounterMetricFamily(name.removesuffix("_total"), doc, labels=[cv.L_LOGGER, cv.L_KIND])
            for (logger, kind), n in sorted(dict(counts).items()):
                family.add_metric([logger, kind], n)
            yield family


#: The process's filter: :func:`monitor.service.logs.configure` installs it on the log handlers.
REPEATS = RepeatFilter()
