"""Two days of probe events for the error-budget tests, per 5 minutes, and the hand-computed answers.

Two classes, each with one probe availability SLO at 99 % over 30d (budget 0.01, P = 2 592 000 s),
1000 valid events per 5 minutes for 24 hours (288 intervals, 288 000 events), healthy for 20 hours:

* ``steady``: from 20h on 50 bad per interval (error ratio 0.05, burn 5).
  Period: 48 × 50 = 2400 bad -> ratio 1/120, burn 5/6, R = 1/6 left.
  T(1h) = R·P / 5 = 432 000 / 5 = 86 400 s; T(1d) = 432 000 / (5/6) = 518 400 s.
* ``ramp``: the burn ramps up hour by hour from 20h: 10, 20, 30, 40 bad per interval.
  Period: 12 × (10+20+30+40) = 1200 bad -> ratio 1/240, burn 5/12, R = 7/12 -> R·P = 1 512 000.
  T(1h) (last hour at 40/1000, burn 4) = 378 000 s; T(1d) (burn 5/12) = 3 628 800 s.

* ``burst``: healthy for 23 hours, then 200 bad per interval: error ratio 0.2 in the 5m, 30m and
  1h windows, above the page condition's 14.4 × 0.01 = 0.144 over 1h/5m (its guard,
  ⌈1 / 0.144⌉ = 7 events, is met by 12 000); 2400 bad over the period leaves R = 1/6.
* ``quiet``: no events at all (no data).

With ``exhaustion_within: 7d`` (604 800 s) the alert holds for ``steady`` (both below) and not
for ``ramp`` (the day's burn projects 42 days). Steps are whole hours so Prometheus' range
extrapolation cannot tell them from the exact counts (the last hour's rate is constant).
"""

from __future__ import annotations

from monitor.config import parse_config
from monitor.model import Model, build_model

STEP = 300.0
INTERVALS = 288
VALID_PER_STEP = 1000
AT = INTERVALS * STEP  # 24h after the first sample

CONFIG = """
version: m3mon/v1
endpoints:
  - {name: pool, base_url: "http://127.0.0.1:8000", model: m3, classes: [steady, ramp, burst, quiet]}
request_classes:
  - name: steady
    max_context_tokens: 32768
    probes: [chat]
    budget_policy: {freeze_below: 20}
    slos: [{name: avail, sli: availability, objective: 99, exhaustion_within: 7d}]
  - name: ramp
    max_context_tokens: 32768
    probes: [chat]
    budget_policy: {freeze_below: 10, freeze_on_page_burn: false}
    slos: [{name: avail, sli: availability, objective: 99, exhaustion_within: 7d}]
  - name: burst
    max_context_tokens: 32768
    probes: [chat]
    slos: [{name: avail, sli: availability, objective: 99}]
  - name: quiet
    max_context_tokens: 32768
    probes: [chat]
    slos: [{name: avail, sli: availability, objective: 99}]
"""

#: Hand-computed (see the module docstring): class -> (T(1h), T(1d)) in seconds, alert holds.
EXPECTED = {"steady": (86_400.0, 518_400.0, True), "ramp": (378_000.0, 3_628_800.0, False)}
#: Budget left over the period: R.
REMAINING = {"steady": 1 / 6, "ramp": 7 / 12}


#: Classes with events in the store (``quiet`` has none).
STORED = ("steady", "ramp", "burst")


def bad_per_step(request_class: str, k: int) -> int:
    """Bad events in interval ``k`` (1-based: it ends at k × 5 min)."""
    if request_class == "burst":  # the last hour only, 200 of 1000: 1h and 5m error ratio 0.2
        return 200 if k > 276 else 0
    if k <= 240:
        return 0
    if request_class == "steady":
        return 50
    return 10 * ((k - 241) // 12 + 1)


def model(storage_url: str = "sqlite:///:memory:") -> Model:
    text = CONFIG + f"storage: {{url: '{storage_url}'}}\n"
    return build_model(parse_config(text, "<budget-scenarios>"))
