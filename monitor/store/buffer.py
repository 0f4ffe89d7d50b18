"""Nothing lost: store writes that wait out a database outage on disk and replay in order.

:class:`BufferedWriter` takes store ops (:mod:`monitor.store.ops`). While the backlog is empty it
writes straight through; when a write fails, the op is appended to a JSON-lines spool file under
``buffer_dir`` and every later op queues behind it, so order is kept. :meth:`BufferedWriter.flush`
replays the spool oldest first, at most ``max_items`` ops per transaction (only that many are
ever held in memory), records how far it got in ``spool.offset`` after each committed batch, and
empties the spool when it is through. Ops are idempotent upserts keyed by natural keys, so an op
replayed twice (e.g. after a crash between commit and offset update) is not duplicated. A new
writer on the same ``buffer_dir`` picks the spool up after a restart.

If the spool itself cannot be written, ops are kept in memory up to ``max_items``; beyond that
they are dropped and counted as write errors (the only way data is lost: disk and database both
gone).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from monitor.store.metrics import StoreMetrics
from monitor.store.ops import Op
from monitor.store.store import Store

log = logging.getLogger(__name__)


class BufferedWriter:
    """Writes ops to ``store``; buffers them on disk while the database is unreachable."""

    def __init__(
        self,
        store: Store,
        buffer_dir: str | Path,
        max_items: int = 100_000,
        metrics: StoreMetrics | None = None,
    ) -> None:
        self.store = store
        self.dir = Path(buffer_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.spool = self.dir / "spool.jsonl"
        self.offset_file = self.dir / "spool.offset"
        self.max_items = max_items
        self.metrics = metrics
        self._memory: deque[Op] = deque()
        self._lock = threading.RLock()
        self._pending = self._count_spooled()
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

    def _count_spooled(self) -> int:
        if not self.spool.exists():
            return 0
        with self.spool.open("rb") as f:
            lines = sum(1 for _ in f)
        return max(0, lines - self._offset())

    @property
    def backlog(self) -> int:
        """Ops waiting to be written (spooled plus held in memory)."""
        return self._pending + len(self._memory)

    def _error(self) -> None:
        if self.metrics is not None:
            self.metrics.write_errors.inc()

    # --- writing -------------------------------------------------------------------------

    def submit(self, op: Op) -> bool:
        """Write ``op`` now if nothing is queued and the database answers; else queue it. True if written."""
        with self._lock:
            if self.backlog == 0:
                try:
                    self.store.apply([op])
                    return True
                except (SQLAlchemyError, OSError) as exc:
                    self._error()
                    log.warning("store unavailable, buffering writes: %s", str(exc).splitlines()[0])
            self._queue(op)
            return False

    def _queue(self, op: Op) -> None:
        line = json.dumps(op, separators=(",", ":"))
        try:
            with self.spool.open("a", encoding="utf-8") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())
            self._pending += 1
        except OSError as exc:
            self._error()
            if len(self._memory) >= self.max_items:
                log.error(
                    "spool %s unwritable and memory buffer full: dropping a write (%s)", self.spool, exc
                )
                return
            self._memory.append(op)

    def _spooled(self, skip: int) -> Iterator[Op]:
        with self.spool.open(encoding="utf-8") as f:
            for i, line in enumerate(f):
                if i >= skip and line.strip():
                    yield json.loads(line)

    def _batches(self) -> Iterator[list[Op]]:
        batch: list[Op] = []
        for op in self._spooled(self._offset()):
            batch.append(op)
            if len(batch) >= self.max_items:
                yield batch
                batch = []
        if batch:
            yield batch

    def flush(self) -> int:
        """Replay the backlog in order; returns how many ops were written (stops at the first failure)."""
        with self._lock:
            written = 0
            try:
                if self._pending:
                    for batch in self._batches():
                        self.store.apply(batch)
                        written += len(batch)
                        self._pending -= len(batch)
                        self._set_offset(self._offset() + len(batch))
                    self.spool.unlink(missing_ok=True)
                    self.offset_file.unlink(missing_ok=True)
                    self._pending = 0
                while self._memory:
                    self.store.apply([self._memory[0]])
                    self._memory.popleft()
                    written += 1
            except (SQLAlchemyError, OSError) as exc:
                self._error()
                log.warning(
                    "store still unavailable (%d ops buffered): %s", self.backlog, str(exc).splitlines()[0]
                )
            return written
