"""Goodput from real-traffic spans (and from probes) in the weekly report, counted by hand.

Classes (limits = the tightest threshold per SLI, docs/slo-events.md "goodput"):

* ``chat`` (32768 tokens): TTFT ≤ 1 s (tighter of 1 s and 2.5 s), TPOT ≤ 50 ms, e2e ≤ 20 s,
  stall ≤ 2 s (a span cannot measure stall: not judged from spans);
* ``long`` (131072 tokens): TTFT ≤ 20 s, e2e ≤ 120 s, queue ≤ 5 s;
* ``quiet`` (32768 tokens): availability only; no span reaches it.

Endpoints: ``ep-one`` [chat] (service.name = its name); ``ep-multi`` [chat, long] with
``span_service_name: vllm-multi`` (routed by context ceiling); ``ep-fixed`` [chat, long] with
``span_class: long``; ``ep-pair`` [chat, quiet] (both 32768: a tie, unroutable).

| # | service | tokens in+out | ttft | e2e | queue | class | why | good? |
|---|---|---|---|---|---|---|---|---|
| 1 | ep-one | 10+101 | 0.5 | 5.5 | | chat | TPOT (5.5−0.5)/100 = 50 ms, at the limit | good |
| 2 | ep-one | 10+50 | 1.2 | 3 | | chat | TTFT over 1 s | bad |
| 3 | ep-one | 10+101 | 0.4 | 10.4 | | chat | TPOT 100 ms | bad |
| 4 | ep-one | 10+0 | — | 0.2 | | chat | no output token: failed | bad |
| 5 | ep-one | 10+1 | 0.3 | 0.3 | | chat | one token, no TPOT: judged on the rest | good |
| 6 | vllm-multi | 1000+200 | 0.8 | 2.79 | | chat | fits 32768; TPOT 10 ms | good |
| 7 | vllm-multi | 100000+500 | 15 | 60 | 6 | long | queue over 5 s | bad |
| 8 | vllm-multi | 50000+1000 | 10 | 100 | 1 | long | | good |
| 9 | vllm-multi | 32000+768 | 0.9 | 16.24 | | chat | exactly 32768 fits chat; TPOT 20 ms | good |
| 10 | vllm-multi | 200000+10 | | | | — | longer than every ceiling | unattributed |
| 11 | vllm-multi | ? | | | | — | multi-class, no token counts | unattributed |
| 12 | gateway | | | | | — | service.name of no endpoint | unattributed |
| 13 | (none) | | | | | — | no service.name | unattributed |
| 14 | ep-one | 10+20 | 0.1 | 0.5 | | — | a probe's trace: left to the probes | excluded |
| 15 | ep-one | | | | | — | ended before the week | not read |
| 16 | ep-one | | | | | — | ended after the report's end | not read |
| 17 | ep-fixed | 1000+50 | 0.5 | 1 | 0.1 | long | span_class | good |
| 18 | ep-pair | 100+10 | | | | — | chat and quiet tie at 32768 | unattributed |

chat: 4 good of 7 (1, 5, 6, 9); tokens 101+1+200+768 = 1070 of 101+50+101+0+1+200+768 = 1221.
long: 2 good of 3 (8, 17); tokens 1050 of 1550. quiet: no spans (no data).

Probes (chat): a good run; a run with a 2.5 s gap (stall, bad); a timeout (bad); a
monitor_error (no event); a good run whose trace holds span 14 → 2 good of 4.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.errors import ConfigError
from monitor.model import Model, load_model
from monitor.probes.result import Gap, ProbeResult, Timings
from monitor.report import generate, goodput
from monitor.report.collect_probes import ProbeFacts
from monitor.report.data import Period
from monitor.report.export import render_json
from monitor.report.markdown import render_markdown
from monitor.report.page import render_html
from monitor.report.redact import Redactor
from monitor.slo import span_goodput as sg
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op, probe_op, spans_op
from monitor.traces import ServerSpan
from tests.support.postgres import fresh_database, postgres_cluster, postgres_url  # noqa: F401  (fixtures)

CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep-one, base_url: "http://127.0.0.1:9", model: m, classes: [chat]}
  - {name: ep-multi, base_url: "http://127.0.0.1:10", model: m, classes: [chat, long],
     span_service_name: vllm-multi}
  - {name: ep-fixed, base_url: "http://127.0.0.1:11", model: m, classes: [chat, long], span_class: long}
  - {name: ep-pair, base_url: "http://127.0.0.1:12", model: m, classes: [chat, quiet]}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: ttft-p95, sli: ttft, threshold: 1s, objective: 95, source: probes}
      - {name: ttft-p99, sli: ttft, threshold: 2.5s, objective: 99, source: server}
      - {name: tpot, sli: tpot, threshold: 50ms, objective: 95, source: probes}
      - {name: e2e, sli: e2e, threshold: 20s, objective: 95, source: probes}
      - {name: stall, sli: stall, threshold: 2s, objective: 95, source: probes}
  - name: long
    max_context_tokens: 131072
    probes: [chat]
    slos:
      - {name: ttft, sli: ttft, threshold: 20s, objective: 95, source: server}
      - {name: e2e, sli: e2e, threshold: 120s, objective: 95, source: server}
      - {name: queue, sli: queue_time, threshold: 5s, objective: 95, source: server}
  - name: quiet
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: availability, sli: availability, objective: 99, source: probes}
storage: {url: "sqlite:///unused.db"}
"""
START = datetime(2026, 11, 23, tzinfo=UTC).timestamp()
END = datetime(2026, 11, 30, tzinfo=UTC).timestamp()
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)  # the report's end (as_of)
AT = START + 86400.0
PROBE_TRACE = f"{0xABC:032x}"


def span(n: int, service: str | None, tokens: tuple[int | None, int | None] = (None, None), ttft: float | None = None,
         e2e: float | None = None, queue: float | None = None, end: float | None = None,
         trace: str | None = None) -> ServerSpan:  # fmt: skip
    t1 = AT + n if end is None else end
    return ServerSpan(trace or f"{n:032x}", f"{n:016x}", "llm_request", t1 - (e2e or 1.0), t1, queue=queue,
                      ttft=ttft, e2e=e2e, prompt_tokens=tokens[0], completion_tokens=tokens[1],
                      service_name=service)  # fmt: skip


SPANS = [
    span(1, "ep-one", (10, 101), 0.5, 5.5),
    span(2, "ep-one", (10, 50), 1.2, 3.0),
    span(3, "ep-one", (10, 101), 0.4, 10.4),
    span(4, "ep-one", (10, 0), None, 0.2),
    span(5, "ep-one", (10, 1), 0.3, 0.3),
    span(6, "vllm-multi", (1000, 200), 0.8, 0.8 + 199 * 0.01),
    span(7, "vllm-multi", (100000, 500), 15.0, 60.0, queue=6.0),
    span(8, "vllm-multi", (50000, 1000), 10.0, 100.0, queue=1.0),
    span(9, "vllm-multi", (32000, 768), 0.9, 0.9 + 767 * 0.02),
    span(10, "vllm-multi", (200000, 10), 5.0, 6.0),
    span(11, "vllm-multi", (None, None), 0.5, 1.0),
    span(12, "gateway", (10, 10), 0.5, 1.0),
    span(13, None, (10, 10), 0.5, 1.0),
    span(14, "ep-one", (10, 20), 0.1, 0.5, trace=PROBE_TRACE),
    span(15, "ep-one", (10, 20), 0.1, 0.5, end=START),
    span(16, "ep-one", (10, 20), 0.1, 0.5, end=NOW.timestamp() + 1),
    span(17, "ep-fixed", (1000, 50), 0.5, 1.0, queue=0.1),
    span(18, "ep-pair", (100, 10), 0.5, 1.0),
]


def probes() -> list[ProbeResult]:
    def run(i: int, reason: str | None, t: Timings | None = None, trace: str | None = None) -> ProbeResult:
        return ProbeResult("ep-one", "chat", "chat", AT + 100 * i, reason, t or Timings(), trace_id=trace)

    fast = Timings(ttft=0.5, tpot=0.03, e2e=3.0, chunk_gaps=(Gap(0.6, 0.1, 1, 1),))
    stalled = Timings(ttft=0.5, tpot=0.03, e2e=5.0, chunk_gaps=(Gap(0.6, 2.5, 1, 1),))
    return [run(1, None, fast), run(2, None, stalled), run(3, "timeout"), run(4, "monitor_error"),
            run(5, None, Timings(ttft=0.3, e2e=0.5), PROBE_TRACE)]  # fmt: skip


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Model:
    path = tmp_path_factory.mktemp("span-goodput") / "monitor.yaml"
    path.write_text(CONFIG)
    return load_model(path)


def _fill(url: str, model: Model) -> None:
    upgrade(url)
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints), *(probe_op(model, p) for p in probes()), spans_op(SPANS)])
    finally:
        store.close()


@pytest.fixture(scope="module")
def sqlite_url(model: Model, tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('span-goodput-db') / 'm3mon.db'}"
    _fill(url, model)
    return url


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, model: Model) -> Iterator[str]:
    if request.param == "sqlite":
        yield request.getfixturevalue("sqlite_url")
        return
    with fresh_database(request.getfixturevalue("postgres_url")) as url:
        _fill(url, model)
        yield url


def _section(model: Model, url: str) -> goodput.GoodputSection:
    week = Period("2026-W48", datetime.fromtimestamp(START, UTC), datetime.fromtimestamp(END, UTC))
    store = Store(url)
    try:
        with store.session() as s:
            facts = ProbeFacts(model, s, week, Redactor(), NOW.timestamp())
            return goodput.collect(model, s, START, NOW.timestamp(), facts.in_week)
    finally:
        store.close()


def test_span_and_probe_goodput_equal_the_hand_count(model: Model, db_url: str) -> None:
    section = _section(model, db_url)
    lines = {g.request_class: g for g in section.lines}
    chat, long, quiet = lines["chat"], lines["long"], lines["quiet"]
    assert (chat.spans, chat.span_good) == (7, 4)
    assert (chat.span_output_tokens, chat.span_good_output_tokens) == (1221, 1070)
    assert (long.spans, long.span_good) == (3, 2)
    assert (long.span_output_tokens, long.span_good_output_tokens) == (1550, 1050)
    assert (quiet.spans, quiet.span_ratio, quiet.token_ratio) == (0, None, None)
    assert (chat.probe_runs, chat.probe_good) == (4, 2)
    assert (long.probe_runs, long.probe_ratio) == (0, None)
    assert chat.not_from_spans == ("stall",) and long.not_from_spans == ()
    assert dict(chat.limits) == {"ttft": 1.0, "tpot": 0.05, "e2e": 20.0, "stall": 2.0}
    assert dict(section.unattributed) == {
        sg.NO_SERVICE: 1, sg.UNKNOWN_SERVICE: 1, sg.NO_TOKENS: 1, sg.TOO_LONG: 1, sg.TIED: 1
    }  # fmt: skip
    assert section.probe_trace_spans == 1


def test_the_report_shows_both_goodputs(model: Model, sqlite_url: str) -> None:
    store = Store(sqlite_url)
    try:
        week = Period("2026-W48", datetime.fromtimestamp(START, UTC), datetime.fromtimestamp(END, UTC))
        data = generate.build(model, store, week, NOW)
    finally:
        store.close()
    md, html = render_markdown(data), render_html(data)
    # chat 4/7 = 57.143 %, tokens 1070/1221 = 87.633 %, probes 2/4; long 2/3, tokens 1050/1550
    row = next(line for line in md.splitlines() if line.startswith("| chat | TTFT ≤"))
    assert row.split(" | ")[2:9] == ["4", "50.000%", "7", "57.143%", "87.633%", "no first token 1", "stall |"]
    assert (
        "| long | TTFT ≤ 20.00 s, e2e ≤ 120.00 s, queue ≤ 5.00 s | 0 | no data | 3 | 66.667% | 67.742% | — |"
        in md
    )
    for text_ in (md, html):
        assert "OTLP spans, server-side" in text_ and "network and proxy time are not in it" in text_
        assert "Spans of probe traces left to the probe column: 1." in text_
    assert '<td class="num">57.143%</td>' in html and "none (answered right)" in html
    doc = json.loads(render_json(data))["goodput"]
    chat = next(c for c in doc["classes"] if c["class"] == "chat")
    assert chat["spans"]["good"] == 4 and chat["spans"]["spans"] == 7 and chat["probes"]["ratio"] == 0.5
    assert sum(doc["unattributed_spans"].values()) == 5


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("span_class: long}", "span_class 'long' is not one of its classes"),
        ("span_service_name: ep-one}", "span service name 'ep-one' is another endpoint's too"),
    ],
)
def test_span_attribution_fields_are_checked(tmp_path: Path, edit: str, message: str) -> None:
    bad = CONFIG.replace("model: m, classes: [chat, quiet]}", f"model: m, classes: [chat, quiet], {edit}")
    path = tmp_path / "monitor.yaml"
    path.write_text(bad)
    with pytest.raises(ConfigError, match=message) as info:
        load_model(path)
    assert "endpoints[3]" in str(info.value) or "endpoints.3" in str(info.value)
