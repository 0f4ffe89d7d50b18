"""Data flows one way (README "Shape of the code"): a module never imports from a stage downstream
of it. Read from the source with ``ast`` (imports inside functions count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MONITOR = Path(__file__).resolve().parents[1] / "monitor"

#: package -> packages it must never import (the stages after it, and the entry points)
DOWNSTREAM = {
    "bottleneck": ("report", "service", "cli", "demo", "generate", "exporter"),
    "slo": ("report", "service", "cli", "demo", "generate", "bottleneck"),
    "store": ("report", "service", "cli", "demo", "generate", "bottleneck"),
    "scrape": ("slo", "store", "report", "service", "cli", "demo", "bottleneck"),
    "probes": ("slo", "store", "report", "service", "cli", "demo", "bottleneck"),
    "report": ("service", "cli", "demo", "sim", "history", "scrape"),
    "starter": ("store", "report", "service", "cli", "demo", "generate", "bottleneck"),
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


@pytest.mark.parametrize("package", sorted(DOWNSTREAM))
def test_no_module_reaches_downstream(package: str) -> None:
    bad = []
    for path in sorted((MONITOR / package).rglob("*.py")):
        for module in _imports(path):
            parts = module.split(".")
            if parts[0] == "monitor" and len(parts) > 1 and parts[1] in DOWNSTREAM[package]:
                bad.append(f"{path.relative_to(MONITOR.parent)} imports {module}")
    assert not bad, "\n".join(bad)
