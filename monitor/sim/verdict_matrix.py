"""Judge the bottleneck verdict on simulated pools: each world for an hour, the verdict every 15 s.

For a world (:mod:`monitor.sim.worlds`) the verdict is decided every :data:`STEP` seconds from
:data:`START` on, exactly as the service assesses a class (``monitor.bottleneck``: the same
``gather`` and ``decide``), and judged against the world's truth:

* before the onset, and for the whole hour of a world without a fault, every verdict must be the
  world's control verdict (``none``, or ``insufficient_evidence`` for a world too quiet to judge);
* after the onset, :attr:`Judged.time_to_verdict` is the time from the onset to the first right
  verdict after which no wrong one follows, and :attr:`Judged.wrong_after` counts the wrong
  verdicts after that (0 when the verdict holds);
* two causes at once (``World.also``) must both be named by the verdicts that count as right;
* for a fault that ends (``World.until``), :attr:`Judged.time_to_clear` is the time from its end
  to the control verdict that then holds;
* :attr:`Judged.flips` counts changes of verdict over the hour.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.rules import Verdict, decide
from monitor.sim.worlds import World, inputs_at, simulate

STEP = 15.0
#: The first verdict: the tail window is full of probes from here on (a service that just started
#: says ``insufficient_evidence`` or reads the server alone before).
START = 300.0


@dataclass(frozen=True)
class Judged:
    world: World
    verdicts: tuple[tuple[float, Verdict], ...]

    def _right(self, v: Verdict) -> bool:
        named = {c.verdict for c in v.causes}
        return v.verdict in self.world.expect and set(self.world.also) <= named | {v.verdict}

    @property
    def control(self) -> str:
        return self.world.expect[0] if self.world.after is None else "none"

    @property
    def before(self) -> tuple[Verdict, ...]:
        onset = self.world.onset if self.world.after is not None else float("inf")
        return tuple(v for t, v in self.verdicts if t < onset)

    @property
    def after(self) -> tuple[tuple[float, Verdict], ...]:
        """The verdicts while the fault holds (from its onset to its end, if it ends)."""
        if self.world.after is None:
            return ()
        end = self.world.until if self.world.until is not None else float("inf")
        return tuple((t, v) for t, v in self.verdicts if self.world.onset <= t < end)

    @property
    def time_to_clear(self) -> float | None:
        """Seconds from the fault's end to the control verdict that then holds (None: the fault
        does not end in the hour, or the verdict never clears)."""
        until = self.world.until
        if until is None:
            return None
        later = [(t, v.verdict) for t, v in self.verdicts if t >= until]
        cleared = None
        for t, name in reversed(later):
            if name != self.control:
                break
            cleared = t
        return None if cleared is None else cleared - until

    @property
    def false_before(self) -> int:
        """Verdicts before the onset (the whole hour without a fault) other than the control."""
        return sum(1 for v in self.before if v.verdict != self.control)

    @property
    def time_to_verdict(self) -> float | None:
        """Seconds from the onset to the first right verdict that holds to the end (None: never)."""
        after = self.after
        held = None
        for t, v in reversed(after):
            if not self._right(v):
                break
            held = t
        if held is None:
            return None
        first = next(t for t, v in after if self._right(v))
        return first - self.world.onset if first == held else held - self.world.onset

    @property
    def wrong_after(self) -> int:
        """Wrong verdicts after the first right one."""
        after = self.after
        first = next((i for i, (_, v) in enumerate(after) if self._right(v)), len(after))
        return sum(1 for _, v in after[first:] if not self._right(v))

    @property
    def flips(self) -> int:
        names = [v.verdict for _, v in self.verdicts]
        return sum(1 for a, b in itertools.pairwise(names) if a != b)

    def counts(self) -> Counter[str]:
        """Verdicts once the fault holds (the whole hour for a world without one)."""
        rows = [v for _, v in self.after] if self.world.after is not None else list(self.before)
        return Counter(v.verdict for v in rows)


def judge(world: World) -> Judged:
    """Run ``world`` and decide its verdict every :data:`STEP` seconds."""
    held = simulate(world)
    out = []
    t = START
    while t <= world.duration:
        out.append((t, decide(gather(inputs_at(held, t)))))
        t += STEP
    return Judged(world, tuple(out))
