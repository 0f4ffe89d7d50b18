"""The reasons the collector gives for ignoring a vLLM family hold on the pages that serve it: the
labels a reason relies on (``IGNORED_LABELS``) are on every series of the family, on the held
pages and on the simulator's (the real-vLLM tier runs :func:`problems` on a real vLLM's page)."""

from __future__ import annotations

from pathlib import Path

from monitor.scrape.ignored import IGNORED_FAMILIES, IGNORED_LABELS
from monitor.scrape.page import parse
from monitor.sim.harness import running_simulator
from tests.support import localhttp

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "metrics"


def problems(text: str) -> list[str]:
    """Each ignored family's series on the page that lacks a label its reason relies on."""
    page = parse(text, partial=True)
    out = []
    for s in page.samples:
        for label in IGNORED_LABELS.get(s.name, ()):
            if label not in s.labels:
                out.append(
                    f"{s.name}: no {label!r} label, yet its reason relies on it: {IGNORED_FAMILIES[s.name]}"
                )
    return sorted(set(out))


def test_every_reason_label_is_a_family_it_ignores() -> None:
    assert set(IGNORED_LABELS) <= set(IGNORED_FAMILIES)


def test_reasons_hold_on_the_held_pages_and_the_simulator() -> None:
    texts = [p.read_text() for p in sorted(FIXTURES.glob("vllm-*.txt"))]
    with running_simulator() as sim:
        texts.append(localhttp.get(f"{sim.base_url}/metrics", timeout=10).text)
    assert [p for text in texts for p in problems(text)] == []
    sim_page = parse(texts[-1])
    assert any(s.name == "vllm:tool_call_parser_invocations_total" for s in sim_page.samples), (
        "checked at least once"
    )


def test_a_reason_that_does_not_hold_is_caught() -> None:
    text = '# TYPE vllm:tool_call_parser_invocations_total counter\nvllm:tool_call_parser_invocations_total{mode="x"} 1.0\n'
    assert len(problems(text)) == 1 and "'outcome'" in problems(text)[0]
