"""A write path that never stalls: ops wait out a database outage on disk; a bad op is set aside.

:class:`BufferedWriter` takes store ops (:mod:`monitor.store.ops`). While the backlog is empty it
writes straight through. When a write fails, :func:`monitor.store.failures.database_away` decides:

* **the database is away** (unreachable, restarting, read-only, full, not migrated): the op is
  appended to a JSON-lines spool file under ``buffer_dir`` and every later op queues behind it, so
  order is kept. :meth:`BufferedWriter.flush` replays the spool oldest first, at most
  ``max_items`` ops per transaction (only that many are ever held in memory), records how far it
  got in ``spool.offset`` after each committed batch, and empties the spool when it is through.
* **the op itself is bad** (a value too long for its column, a NUL byte, a violated constraint, a
  malformed or unreadable op): the op is written to ``dead-letters.jsonl`` in ``buffer_dir`` with
  the error, counted in ``m3mon_store_dead_letters_total{reason}``, and the queue moves on. When a
  replayed batch fails that way, its ops are retried one by one, so only the bad op is set aside.

Ops are idempotent upserts keyed by natural keys, so an op replayed twice (e.g. after a crash
between commit and offset update) is not duplicated. A new writer on the same ``buffer_dir`` picks
the spool up after a restart. If the spool itself cannot be written, ops are kept in memory up to
``max_items``; beyond that they are dropped and counted as write errors (the only way data is
lost: disk and database both gone).

``database_away`` says whether the last write attempt found the database away (the evaluator skips
while it is); :meth:`BufferedWriter.complete_until` says up to when the store already holds every
event the writer was given: SLO steps before the oldest queued event are final even with a backlog.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from monitor.model import Model
from monitor.store import failures
from monitor.store.failures import dead_letter_reason, describe, store_error
from monitor.store.metrics import StoreMetrics
from monitor.store.ops import Op, event_time
from monitor.store.store import Store

log = logging.getLogger(__name__)

#: The op a spool line that is not JSON becomes: applying it fails, so it is dead-lettered.
UNREADABLE = "unreadable spool line"


def _earliest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _qualname(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def _append_line(path: Path, line: str) -> bool:
    """Append ``line`` durably; True when a torn last line had to be terminated first."""
    with path.open("a+b") as f:
        torn = False
        if os.fstat(f.fileno()).st_size > 0:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
        f.write((b"\n" if torn else b"") + line.encode("utf-8") + b"\n")
        f.flush()
        os.fsync(f.fileno())
    return torn


def dead_letter_record(op: Any, exc: BaseException, at: float) -> dict[str, Any]:
    """One line of the dead-letter file: when, why (reason, error class, message) and the op."""
    cause = getattr(exc, "orig", None)
    return {
        "at": at,
        "time": datetime.fromtimestamp(at, UTC).isoformat(),
        "reason": dead_letter_reason(exc),
        "error": _qualname(exc),
        "cause": _qualname(cause) if isinstance(cause, BaseException) else None,
        "sqlstate": getattr(cause, "sqlstate", None),
        "message": describe(exc),
        "op": op,
    }


class BufferedWriter:
    """Writes ops to ``store``; spools them while the database is away, dead-letters bad ones."""

    def __init__(
        self,
        store: Store,
        buffer_dir: str | Path,
        max_items: int = 100_000,
        metrics: StoreMetrics | None = None,
        model: Callable[[], Model] | None = None,
    ) -> None:
        self.store = store
        self.model = model  # the live model, for the intervals a reading bounds (reloads included)
        self.dir = Path(buffer_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.spool = self.dir / "spool.jsonl"
        self.offset_file = self.dir / "spool.offset"
        self.dead_letter_file = self.dir / "dead-letters.jsonl"
        self.max_items = max_items
        self.metrics = metrics
        self.dead_letters = 0  # ops set aside by this writer
        self.database_away = False  # the last write attempt failed because the database was away
        self.away_since: float | None = None  # monotonic time of the first of those failures
        self._memory: deque[Op] = deque()
        self._lock = threading.RLock()
        self._pending = 0
        self._since: float | None = None
        self._rescan()
        if metrics is not None:
            metrics.track(self)

    # --- bookkeeping ---------------------------------------------------------------------

    def _offset(self) -> int:
        try:
            return int(self.offset_file.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    def _set_offset(self, n: int) -> None:
        tmp = self.offset_file.with_suffix(".tmp")
        tmp.write_text(str(n))
        os.replace(tmp, self.offset_file)

    def _advance(self, n: int) -> None:
        self._pending = max(0, self._pending - n)
        self._set_offset(self._offset() + n)

    def _rescan(self) -> None:
        """Count the spooled ops and find their earliest event (at start, after a partial replay)."""
        pending, since = 0, None
        if self.spool.exists():
            for op in self._spooled(self._offset()):
                pending, since = pending + 1, _earliest(since, event_time(op))
        for op in self._memory:
            since = _earliest(since, event_time(op))
        self._pending, self._since = pending, since

    @property
    def backlog(self) -> int:
        """Ops waiting to be written (spooled plus held in memory)."""
        return self._pending + len(self._memory)

    def oldest_pending_event_time(self) -> float | None:
        """The earliest SLO event time among queued ops (None: nothing queued changes SLO counts)."""
        return self._since if self.backlog else None

    def complete_until(self, t: float) -> float:
        """``t``, or just before the oldest queued event if that is earlier: the store already holds
        every event up to the returned time, so an SLO evaluated at an instant up to it is final."""
        oldest = self.oldest_pending_event_time()
        return t if oldest is None or oldest > t else math.nextafter(oldest, -math.inf)

    def _try(self, ops: list[Op]) -> BaseException | None:
        try:
            applied = self.store.apply(ops, self.model() if self.model is not None else None)
        except Exception as exc:  # the database is away, or the op is bad: the caller decides what next
            if self.metrics is not None:
                self.metrics.write_errors.inc()
            self.database_away = failures.database_away(exc)
            if self.away_since is None and self.database_away:
                self.away_since = time.monotonic()
            return exc
        self.database_away, self.away_since = False, None
        if self.metrics is not None:
            self.metrics.applied(applied)
        return None

    # --- writing -------------------------------------------------------------------------

    def submit(self, op: Op) -> bool:
        """Write ``op`` now if nothing is queued and the database answers; else queue it. True if written."""
        with self._lock:
            if self.backlog == 0:
                exc = self._try([op])
                if exc is None:
                    return True
                if not self.database_away:
                    self._dead_letter(op, exc)
                    return False
                log.warning("store unavailable, buffering writes: %s", store_error(exc))
            self._queue(op)
            return False

    def _queue(self, op: Op) -> None:
        try:
            line = json.dumps(op, separators=(",", ":"))
        except (TypeError, ValueError) as exc:  # not JSON: it could never be replayed
            self._dead_letter(op, exc)
            return
        try:
            torn = _append_line(self.spool, line)
            self._pending += 1
            if torn:  # a line torn by a crash or a failed write was terminated: count from the file
                self._rescan()
        except OSError as exc:
            if self.metrics is not None:
                self.metrics.write_errors.inc()
            if len(self._memory) >= self.max_items:
                log.error("spool %s unwritable, memory buffer full: dropping a write (%s)", self.spool, exc)
                return
            self._memory.append(op)
        self._since = _earliest(self._since, event_time(op))

    def _dead_letter(self, op: Any, exc: BaseException) -> None:
        """Set ``op`` aside in the dead-letter file with its error, count it, and move on."""
        record = dead_letter_record(op, exc, time.time())
        self.dead_letters += 1
        if self.metrics is not None:
            self.metrics.dead_letter(record["reason"])
        line = json.dumps(record, separators=(",", ":"), default=repr)
        kind = op.get("op") if isinstance(op, dict) else type(op).__name__
        try:
            _append_line(self.dead_letter_file, line)
        except OSError as err:
            log.error("store: cannot write %s (%s); the %s op is lost: %s", self.dead_letter_file, err, kind,
                      line[:2000])  # fmt: skip
            return
        log.error("store: %s op set aside in %s (%s: %s)", kind, self.dead_letter_file,
                  record["reason"], record["message"])  # fmt: skip

    # --- replay --------------------------------------------------------------------------

    def _spooled(self, skip: int) -> Iterator[Op]:
        with self.spool.open("rb") as f:
            for i, raw in enumerate(f):
                if i < skip:
                    continue
                try:
                    yield json.loads(raw)
                except ValueError:  # a torn or damaged line: dead-lettered when replayed
                    yield {"op": UNREADABLE, "line": raw.decode("utf-8", "replace")[:10_000]}

    def _batches(self) -> Iterator[list[Op]]:
        batch: list[Op] = []
        for op in self._spooled(self._offset()):
            batch.append(op)
            if len(batch) >= self.max_items:
                yield batch
                batch = []
        if batch:
            yield batch

    def _one(self, op: Op) -> bool | BaseException:
        """Apply ``op`` alone: True written, False dead-lettered, the error if the database is away."""
        exc = self._try([op])
        if exc is None:
            return True
        if self.database_away:
            return exc
        self._dead_letter(op, exc)
        return False

    def _one_by_one(self, ops: Iterable[Op], advance: bool) -> tuple[int, BaseException | None]:
        written = 0
        for op in ops:
            result = self._one(op)
            if isinstance(result, BaseException):
                return written, result
            written += result
            if advance:
                self._advance(1)
            else:
                self._memory.popleft()
        return written, None

    def _replay_spool(self) -> tuple[int, BaseException | None]:
        if not self._pending:
            return 0, None
        written = 0
        for batch in self._batches():
            exc = self._try(batch)
            if exc is None:
                written += len(batch)
                self._advance(len(batch))
                continue
            if self.database_away:
                return written, exc
            done, away = self._one_by_one(batch, advance=True)  # find the bad op(s) in the batch
            written += done
            if away is not None:
                return written, away
        self.spool.unlink(missing_ok=True)
        self.offset_file.unlink(missing_ok=True)
        self._pending = 0
        return written, None

    def flush(self) -> int:
        """Replay the backlog in order; returns how many ops were written. Stops while the database
        is away; an op that fails on its own is dead-lettered and the replay goes on."""
        with self._lock:
            before = self.backlog
            written, away = self._replay_spool()
            if away is None:
                done, away = self._one_by_one(list(self._memory), advance=False)
                written += done
            if away is not None:
                log.warning("store still unavailable (%d ops buffered): %s", self.backlog, store_error(away))
            if self.backlog == 0:
                self._since = None
            elif self.backlog < before:
                self._rescan()
            return written
