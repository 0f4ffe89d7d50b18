"""The scenario matrix's cases a real vLLM 0.32 CPU server can show (docs/bottleneck.md "Against a
real vLLM"), run beside the simulated matrix when ``M3MON_BENCH_REAL=1``: overload -> a
queue-owned verdict (``tests/real_vllm/test_verdict.py``) and long prompts -> ``prefill_bound``
(``tests/real_vllm/test_verdict_prefill.py``).

Each case is its real-tier test, run alone and one after the other (each takes the machine's CPU
for a few minutes; the first run of the tier installs the vLLM CPU stack); the tests print one
line each (``tests/real_vllm/verdict_support.py``) with the verdict, the seconds from the load's
start to it on the exporter, and what ``m3mon slo status`` said at that instant. Wall time, so
the seconds depend on the machine (``docs/bottleneck.md`` has a measured run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = ("tests/real_vllm/test_verdict.py", "tests/real_vllm/test_verdict_prefill.py")
#: A case's bound: the tier's own per-test bound (a cold stack install, a slow server start).
TIMEOUT = 3600.0
MARK = "real verdict | "


def run_case(test: str) -> tuple[str, list[str]]:
    """The case's outcome (``passed``, ``failed (exit N)``, ``timed out``) and its printed lines."""
    env = {**os.environ, "M3MON_REAL_VLLM": "1", "M3MON_REQUIRE_REAL": "1", "M3MON_VERDICT_OVERLOAD": "1"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-W",
        "error",
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        "-s",
        "-q",
        test,
    ]
    try:
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "timed out", []
    lines = [ln.removeprefix(MARK) for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    return ("passed" if done.returncode == 0 else f"failed (exit {done.returncode})"), lines


def main() -> int:
    print("Against a real vLLM 0.32 (CPU, no optional flag): the matrix's reachable cases\n")
    bad = 0
    for test in CASES:
        outcome, lines = run_case(test)
        bad += outcome != "passed"
        print(f"{Path(test).name}: {outcome}")
        for line in lines:
            print(f"  {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    if os.environ.get("M3MON_BENCH_REAL", "") in ("", "0"):  # `make bench` runs every bench/*.py
        print("real vLLM cases off: set M3MON_BENCH_REAL=1 (they take the machine's CPU for minutes)")
        raise SystemExit(0)
    raise SystemExit(main())
