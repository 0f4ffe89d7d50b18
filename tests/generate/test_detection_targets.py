"""``m3mon check-config`` prints a detection target for every SLO alert, against hand arithmetic.

The example's interactive-32k availability SLO: 99.9 % over 30 d (budget 0.001, 43,200 one-minute
steps), ``exhaustion_within: 24h``, probed every 30 s with a 60 s timeout. By hand, with the
period full of healthy traffic and a share e of bad events from the onset, k minutes in:

* ``SLOErrorBudgetExhausted``: e·k / 43,200 ≥ 0.001 → k ≥ 43.2 / e: 44 min for a total outage,
  432 min = 7.2 h at 10 % bad.
* ``SLOErrorBudgetExhaustionSoon``: R = 1 − (e·k / 43,200) / 0.001 = 1 − e·k / 43.2, the 1 d
  window's ratio e·k / 1,440, so T_1d = R × 2,592,000 s / (e·k / 1,440 / 0.001) < 86,400 s ⇔
  43.2 · R < e·k ⇔ 43.2 − e·k < e·k ⇔ e·k > 21.6 (the 1 h window's projection is below a day
  sooner: from k = 2 for a total outage, at once at 10 %): 22 min for a total outage, 217 min =
  3.62 h at 10 % bad.
* ``SLOMetricAbsent``: quiet max(600 s, 2 × 30 s + 60 s) = 600 s, ``for: 10m``, one step:
  21 min after the last completed probe. A server SLO: 10 min + one step = 11 min.
"""

from __future__ import annotations

import subprocess
import sys

from tests.generate.conftest import EXAMPLE, REPO


def _check_config() -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "check-config", EXAMPLE],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def _targets(lines: list[str], klass: str, slo: str) -> str:
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(klass))
    at = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(f"- {slo} "))
    assert lines[at + 1].strip().startswith("detection: page:"), lines[at + 1]
    return lines[at + 2].strip()


def test_check_config_prints_the_hand_computed_targets() -> None:
    lines = _check_config()
    assert _targets(lines, "interactive-32k", "availability") == (
        "targets: exhausted: total outage 44 min, 10% bad 7.2 h; "
        "exhaustion soon: total outage 22 min, 10% bad 3.62 h; "
        "absent: 21 min after the last completed probe"
    )
    # a server SLO (no exhaustion_within): 95 %, budget 0.05 → 0.05 × 43,200 = 2,160 min = 36 h; 360 h at 10 %
    assert _targets(lines, "interactive-32k", "ttft-p95") == (
        "targets: exhausted: total outage 36 h, 10% bad 360 h; absent: 11 min after the last server sample"
    )


def test_every_slo_prints_its_targets() -> None:
    lines = _check_config()
    slos = [i for i, line in enumerate(lines) if line.strip().startswith("- ") and "objective" in line]
    assert slos and all(lines[i + 2].strip().startswith("targets: exhausted: ") for i in slos)
