"""Confirmation rounds: when a server starts refusing work, probe its classes a few times at once.

A server that sheds load (vLLM's ``admission_rejections_total``, 429/503 answers) says *that* it
refuses, never whether what it refused comes back: a gateway or a client that retries refused
requests turns shedding into a retry storm, and the server counts each attempt as a new request.
Only a probe that passes the same way shows it (a refused probe, or one the gateway retried).
At one probe round a minute and 30 % refused, the first such probe comes after 3 rounds on
average and after 12 one time in 70: the retry storm would be named minutes late.

So when a scrape of an endpoint shows refusals, each of its classes gets :data:`ROUNDS` extra probe
rounds :data:`EVERY` seconds apart, at most once per :data:`COOLDOWN` per class: with 30 %
refused, the chance that none of them meets a refusal is 0.7**10, 3 %. Their runs are stored and
the verdict reads them as it reads every round (docs/bottleneck.md, "Refusals: confirmation probe
rounds"), but they are diagnostic, no SLI events (``purpose`` ``confirm``, docs/slo-events.md): they
run exactly when the server refuses, so counting them would oversample the bad minutes and burn the
probe SLOs from the monitor's own change of sampling rate.
"""

from __future__ import annotations

from collections.abc import Iterable

ROUNDS = 10
EVERY = 5.0
COOLDOWN = 900.0


class Confirmations:
    """Which classes get confirmation rounds now (:meth:`due`), each at most once per cooldown."""

    def __init__(self, rounds: int = ROUNDS, every: float = EVERY, cooldown: float = COOLDOWN) -> None:
        self.rounds, self.every, self.cooldown = rounds, every, cooldown
        self.last: dict[str, float] = {}

    def due(self, classes: Iterable[str], now: float) -> list[str]:
        """The classes (of an endpoint whose latest scrape showed refusals) to confirm now; each is
        then held back for the cooldown."""
        out = [c for c in classes if now - self.last.get(c, -float("inf")) >= self.cooldown]
        for c in out:
            self.last[c] = now
        return out

    def times(self, now: float) -> list[float]:
        """When a confirmation's rounds run (after ``now``)."""
        return [now + self.every * (k + 1) for k in range(self.rounds)]
