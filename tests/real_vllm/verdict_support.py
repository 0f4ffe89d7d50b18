"""What the real-vLLM verdict tests share: the exporter's verdict and shares, and ``m3mon slo status
--json``'s verdict at the same instant (docs/bottleneck.md "One verdict, one computation")."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.stack import m3mon
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
