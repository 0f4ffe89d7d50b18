"""What the real-vLLM verdict tests share: the exporter's verdict and shares, and ``m3mon slo status
--json``'s verdict at the same instant (docs/bottleneck.md "One verdict, one computation")."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.stack import m3mon, stop, wait_until
from tests.support import localhttp

REPO = Path(__file__).resolve().parents[2]
#: The issue's bound: the verdict names the cause within 2 minutes of the load.
WITHIN = 120.0


def samples(exporter: str, name: str) -> list[tuple[dict[str, str], float]]:
    page = localhttp.get(f"{exporter}/metrics", timeout=5).text
    return [
        (s.labels, s.value) for f in text_string_to_metric_families(page) for s in f.samples if s.name == name
    ]


def verdict(exporter: str) -> str | None:
    held = [lb["verdict"] for lb, v in samples(exporter, "m3mon_bottleneck_verdict") if v == 1.0]
    return held[0] if held else None


def status(config: Path) -> dict[str, Any]:
    cmd = [*m3mon("slo", "status", "-c", str(config), "--json", "--at", str(time.time()))]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, check=True).stdout
    (found,) = json.loads(out)["bottleneck"]
    assert isinstance(found, dict)
    return found


#: The line each real verdict test prints (``-s``), read by bench/verdict_real.py.
LINE = "real verdict | {case} | expect {expect} | exporter {named} after {took:.0f} s | slo status {said} | {reason}"


def report(case: str, expect: str, named: str, took: float, said: dict[str, Any]) -> None:
    print()
    print(
        LINE.format(
            case=case, expect=expect, named=named, took=took, said=said["verdict"], reason=said["reason"]
        )
    )


@contextmanager
def monitor_running(config: Path, port: int, log: Path) -> Iterator[str]:
    """``m3mon run`` on ``config`` (its exporter on ``port``), healthy; yields the exporter's URL and
    always stops the process."""
    with log.open("ab") as out:
        proc = subprocess.Popen(m3mon("run", "-c", str(config), "--upgrade", "--no-report"),
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        exporter = f"http://127.0.0.1:{port}"
        wait_until(lambda: localhttp.get(f"{exporter}/healthz", timeout=1).status_code == 200, 60,
                   "m3mon /healthz")  # fmt: skip
        yield exporter
    finally:
        stop(proc)


def judge_under(load: AbstractContextManager[object], exporter: str, config: Path, case: str,
                expect: str, accept: Callable[[str | None], bool]) -> None:  # fmt: skip
    """Under ``load``: the exporter names an accepted verdict within :data:`WITHIN`, ``slo status``
    names the same one at that time, and no published stage share is below zero."""
    with load:
        started = time.time()
        named = wait_until(lambda: v if accept(v := verdict(exporter)) else None, WITHIN + 30,
                           f"{expect} on the exporter", every=1.0)  # fmt: skip
        took = time.time() - started
        said = status(config)
        again = verdict(exporter)
        shares = samples(exporter, "m3mon_tail_stage_share_ratio")
    report(case, expect, named, took, said)
    assert took <= WITHIN, took
    assert said["verdict"] in (named, again), (named, again, said["reason"])
    assert all(v >= 0 for _, v in shares), [s for s in shares if s[1] < 0]
