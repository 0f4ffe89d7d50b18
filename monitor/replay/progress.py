"""A one-line progress bar on stderr for ``m3mon replay`` (only on a terminal, never with --json)."""

from __future__ import annotations

import sys
from typing import TextIO

WIDTH = 30


class ProgressBar:
    """Redraws ``[#####-----] 12/30 s  140 done  2 failed`` in place; silent when ``enabled`` is False."""

    def __init__(self, duration: float, enabled: bool, stream: TextIO | None = None) -> None:
        self.duration, self.enabled = duration, enabled
        self.stream = stream if stream is not None else sys.stderr

    @classmethod
    def for_terminal(cls, duration: float, json_output: bool) -> ProgressBar:
        return cls(duration, enabled=not json_output and sys.stderr.isatty())

    def __call__(self, finished: int, failed: int, elapsed: float) -> None:
        if not self.enabled:
            return
        filled = min(WIDTH, int(WIDTH * elapsed / self.duration)) if self.duration > 0 else WIDTH
        bar = "#" * filled + "-" * (WIDTH - filled)
        shown = min(elapsed, self.duration)
        self.stream.write(f"\r[{bar}] {shown:.0f}/{self.duration:.0f} s  {finished} done  {failed} failed")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
