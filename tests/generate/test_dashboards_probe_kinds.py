"""No dashboard panel reads a probe series for a class whose probes do not produce it.

The exporter creates every probe series for every class at start, so a panel over a kind's
series for a class that never runs the kind draws an empty (or NaN) line. The oracle is the
example configuration's own ``probes:`` lists, read as YAML here, and which probe kind alone
observes which series (written out below from the probes' code: agent sessions time tool
turnarounds, the long-prompt probe its cold and warm first token). Every query of every generated
dashboard is parsed: a selector of such a series — or any probe series with a ``kind`` matcher —
may match only classes that run the kind, with ``$class`` standing for every class.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.generate.conftest import EXAMPLE, REPO

#: The probe series only one probe kind observes (the oracle; see the docstring).
ONLY_BY_KIND = {
    "m3mon_probe_tool_turnaround_seconds": "agent_session",
    "m3mon_probe_long_prompt_ttft_seconds": "long_prompt",
}
_SELECTOR = re.compile(r"\b(m3mon_probe_\w+?)(?:_bucket|_sum|_count)?\{([^}]*)\}")
_MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')


def _classes() -> dict[str, set[str]]:
    config = yaml.safe_load((REPO / EXAMPLE).read_text())
    return {c["name"]: set(c["probes"]) for c in config["request_classes"]}


def _matches(op: str, pattern: str, value: str) -> bool:
    pattern = pattern.replace("$class", ".*").replace("\\\\", "\\")
    if op in ("=", "!="):
        return (value == pattern) == (op == "=")
    return (re.fullmatch(pattern, value) is not None) == (op == "=~")


def _exprs(generated: Path) -> list[tuple[str, str, str]]:
    """(dashboard, panel title, expression) of every panel query."""
    out = []
    for path in sorted((generated / "dashboards").glob("*.json")):
        d: dict[str, Any] = json.loads(path.read_text())
        panels = [p for top in d["panels"] for p in (top, *top.get("panels", []))]
        out += [
            (path.stem, p.get("title", ""), t["expr"])
            for p in panels
            for t in p.get("targets", [])
            if "expr" in t
        ]
    return out


def violations(generated: Path) -> list[str]:
    classes, found = _classes(), []
    for dashboard, title, expr in _exprs(generated):
        for metric, body in _SELECTOR.findall(expr):
            matchers = _MATCHER.findall(body)
            kinds = {v for k, op, v in matchers if k == "kind" and op == "="}
            if metric in ONLY_BY_KIND:
                kinds.add(ONLY_BY_KIND[metric])
            for name, probes in classes.items():
                selected = all(_matches(op, v, name) for k, op, v in matchers if k == "class")
                if selected and not kinds <= probes:
                    found.append(
                        f"{dashboard} / {title}: {metric} for class {name} (probes {sorted(probes)})"
                    )
    return found


def test_no_panel_queries_a_probe_kind_its_classes_do_not_run(generated: Path) -> None:
    assert not violations(generated)


def test_the_kind_panels_are_still_drawn_for_the_classes_that_run_them(generated: Path) -> None:
    exprs = [e for _, _, e in _exprs(generated)]
    for metric, kind in ONLY_BY_KIND.items():
        running = [n for n, probes in _classes().items() if kind in probes]
        assert running, kind  # the example runs both kinds somewhere
        assert any(metric in e and all(n in e for n in running) for e in exprs), metric
