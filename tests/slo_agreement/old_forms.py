"""The forms issue #11 found wrong, re-created in test code, one narrow patch each.

Each :class:`OldForm` names a finding of the issue, the agreement scenario written for it, the
evaluator the finding was about (``prometheus``: the generated rules; ``store``: the stored
evaluation) and a patch that puts the old form back for the duration of one test:

1. the period ratio as ``avg_over_time`` of the 5-minute ratio, itself a ratio of counts that is
   0/0 = NaN in an empty window (the rules are regenerated in-process with that form);
2. ``or vector(0)`` on the threshold bucket, summed over pools (regenerated in-process);
3. probe events placed at the probe's start (``ProbeResult.completed_at`` = ``started_at``);
4. the exporter observing latency for successful probes only (``probe_answered`` = "ok");
5. a prober exception turned into ``stream_broken`` by the runner (the crash flag read nowhere);
6. no minimum-events guard in the burn conditions (regenerated in-process with a guard of 0).

The product code is never edited: patches are applied with ``pytest.MonkeyPatch`` to module
attributes the real code looks up at call time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from monitor import conventions as cv
from monitor.generate import promql as q
from monitor.generate import sli, slo_rules
from monitor.generate import windows as win
from monitor.generate.rules import record
from monitor.model import SLO, Model
from monitor.probes import metrics, runner
from monitor.probes.result import ProbeResult, Timings
from monitor.probes.runner import PlannedProbe

Patch = Callable[[pytest.MonkeyPatch], None]


def _ids(slo: SLO) -> str:
    return q.matchers([(cv.L_CLASS, q.eq(slo.request_class)), (cv.L_SLO, q.eq(slo.name))])


def _average_of_ratios(mp: pytest.MonkeyPatch, nan: bool) -> None:
    """The 5m ratio recorded again, and the period's ratio read from it."""
    real, real_windows = slo_rules._window_records, slo_rules.windows
    short = cv.ROLLING_WINDOWS[0][0]

    def old(model: Model, slo: SLO, window: str, labels: dict[str, str]) -> list[dict[str, str]]:
        out = real(model, slo, window, labels)
        if window == short and nan:
            zero = f"0 * {cv.SLO_META_OBJECTIVE_RECORD}{_ids(slo)}"  # the old window records: 0 when empty
            bad, valid = (f"({win.summed(k, _ids(slo), window)} or {zero})" for k in ("bad", "valid"))
            out[-1] = record(cv.sli_error_ratio_record(window), f"{bad} / {valid}", labels)
        elif window == slo.period_window:
            ratio5m = cv.sli_error_ratio_record(short) + _ids(slo)
            out[-1] = record(cv.sli_error_ratio_record(window), f"avg_over_time({ratio5m}[{window}])", labels)
        return out

    mp.setattr(slo_rules, "windows", lambda slo: [short, *real_windows(slo)])
    mp.setattr(slo_rules, "_window_records", old)


def average_of_ratios(mp: pytest.MonkeyPatch) -> None:
    """Finding 1: ratio5m = bad/valid (0/0 = NaN when empty); period ratio = avg_over_time(ratio5m)."""
    _average_of_ratios(mp, nan=True)


def average_of_defined_ratios(mp: pytest.MonkeyPatch) -> None:
    """Finding 1, second half: even without NaN (empty 5m windows absent), the period ratio as an
    average of 5m ratios is not Σbad/Σvalid over the period."""
    _average_of_ratios(mp, nan=False)


def bucket_or_zero(mp: pytest.MonkeyPatch) -> None:
    """Finding 2: valid = every request, bad = count - (bucket{le=threshold} or 0): a pool without
    the edge counts every request as bad."""

    def old(base: list[tuple[str, str]], rule: Any) -> sli.Cumulative:
        base = [*base, *map(sli._matcher, rule.select)]
        le = q.le_python_client(rule.threshold)
        count_sel = f"{rule.metric}_count{q.matchers(base)}"
        count = f"sum by ({sli.TARGET}) ({count_sel})"
        good = f"sum by ({sli.TARGET}) ({rule.metric}_bucket{q.matchers([*base, ('le', q.eq(le))])})"
        return sli.Cumulative(count, f"({count} - on ({sli.TARGET}) ({good} or 0 * {count}))", count_sel)

    mp.setattr(sli, "_histogram", old)


def placed_at_start(mp: pytest.MonkeyPatch) -> None:
    """Finding 3: a probe's events at its start time (written, as before, when it finishes)."""
    mp.setattr(ProbeResult, "completed_at", property(lambda self: self.started_at))


def latency_only_when_ok(mp: pytest.MonkeyPatch) -> None:
    """Finding 4: the exporter observes latency for successful probes only."""
    mp.setattr(metrics, "probe_answered", lambda reason: reason is None)


def crash_is_stream_broken(mp: pytest.MonkeyPatch) -> None:
    """Finding 5: the runner's crash branch reports ``stream_broken`` (crash flag set, read nowhere)."""
    real = runner._failed

    def old(p: PlannedProbe, started_at: float, timings: Timings, reason: str, detail: str,
            crashed: bool = False) -> ProbeResult:  # fmt: skip
        return real(p, started_at, timings, "stream_broken" if crashed else reason, detail, crashed)

    mp.setattr(runner, "_failed", old)


def no_guard(mp: pytest.MonkeyPatch) -> None:
    """Finding 6: burn conditions without the minimum-events guard (``valid >= 0`` always holds)."""
    mp.setattr(slo_rules, "min_events", lambda slo, alert: 0)


@dataclass(frozen=True)
class OldForm:
    finding: int
    scenario: str
    source: str  # the evaluator the finding was about: "prometheus" or "store"
    patch: Patch
    regenerate: bool  # the patch changes the generated rules (regenerate the SLO's group in-process)
    shows: tuple[str, ...]  # disagreement lines must contain each: what the old form gets wrong


OLD_FORMS = (
    OldForm(
        1,
        "idle-gaps",
        "prometheus",
        average_of_ratios,
        True,
        (
            "min 85 30d ratio: oracle 0.0142857142857, prometheus nan",
            # SLOErrorBudgetExhausted reads the step records since issue 23, not the period ratio
            # this form replaces, so the finding shows in the published ratio and budget only
            "min 85 budget remaining",
        ),
    ),
    OldForm(
        1,
        "idle-gaps",
        "prometheus",
        average_of_defined_ratios,
        True,
        (
            "min 85 30d ratio: oracle 0.0142857142857, prometheus",
            "min 85 budget remaining: oracle -13.2857142857",
        ),
    ),
    OldForm(
        2,
        "custom-buckets-no-edge",
        "prometheus",
        bucket_or_zero,
        True,
        ("5m ratio: oracle none, prometheus 1", "SLOErrorBudgetBurnPage first fires: oracle None"),
    ),
    OldForm(
        3,
        "slow-probes-timeouts",
        "store",
        placed_at_start,
        False,
        ("min 50 5m ratio: oracle 1, store none", "min 55 5m ratio: oracle 1, store none"),
    ),
    OldForm(
        4,
        "latency-counts-wrong-answers",
        "prometheus",
        latency_only_when_ok,
        False,
        ("min 55 5m ratio: oracle 0.625", "SLOErrorBudgetExhausted first fires: oracle 55"),
    ),
    OldForm(
        5,
        "prober-crash",
        "prometheus",
        crash_is_stream_broken,
        False,
        ("min 60 budget remaining: oracle 1,", "SLOErrorBudgetBurnPage first fires: oracle None"),
    ),
    OldForm(
        6,
        "quiet-hour-one-failure",
        "prometheus",
        no_guard,
        True,
        ("SLOErrorBudgetBurnPage first fires: oracle None",),
    ),
)
