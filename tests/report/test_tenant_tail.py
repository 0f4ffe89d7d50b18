"""Per tenant, which stage owns the tail where it differs from the class's (docs/bottleneck.md,
"Per tenant").

Real-traffic spans of several tenants go through the service's own span intake
(:meth:`monitor.service.jobs.Jobs.spans`: judged for the traffic SLOs, labelled, stored) into a
SQLite store, and the week's report is rendered from it. One tenant (``slowco``, the simulator's
long-and-slow tenant) sends long prompts: its requests are prefill-heavy; the others' slowest
requests waited in the queue. The oracle is computed here from the spans' own attributes by the
documented definition: each request's tenant label (a named tenant, the first ``top_tenants``
others, ``other`` for the rest), its TTFT (vLLM's, no gateway) and e2e (the span's duration), its
stages (tokenization = TTFT − queue − prefill; e2e's ``other`` = e2e − every stage); a group's P95+
band = the requests at or above its nearest-rank P95; its owner = the stage with the most seconds
summed over the band. A tenant with fewer than 20 requests is counted, not judged.
"""

from __future__ import annotations

import asyncio
import html
import json
import math
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from monitor.exporter import Exporter
from monitor.model import load_model
from monitor.report.data import ReportData
from monitor.report.slack import payload
from monitor.service.jobs import Jobs
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op
from monitor.traces.span import ServerSpan
from tests.report.stores import WEEK, rendered

REPO = Path(__file__).resolve().parents[2]
FLOOR = 20  # docs/bottleneck.md: a tenant needs 20 requests before its tail is judged
NAMED = ("slowco",)
TOP = 3
T = WEEK.start.timestamp() + 3600


def _config(folder: Path) -> str:
    return f"""\
version: m3mon/v1
endpoints:
  - {{name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos: [{{name: goodput, sli: goodput, source: traffic, objective: 90}}]
traffic:
  tenants: [{", ".join(NAMED)}]
  top_tenants: {TOP}
  min_tenant_requests: 1
storage: {{url: "sqlite:///{folder / "report.db"}", buffer_dir: "{folder / "spool"}"}}
report: {{timezone: UTC}}
"""


def _span(k: int, tenant: str, queue: float, prefill: float, decode: float) -> ServerSpan:
    """vLLM's llm_request span of one request: tokenization 0.05 s, then queue, prefill, decode."""
    start = T + 60 * k
    ttft = 0.05 + queue + prefill
    return ServerSpan(f"{k + 1:032x}", f"{k + 1:016x}", "llm_request", start, start + ttft + decode + 0.01,
                      queue=queue, ttft=ttft, prefill=prefill, decode=decode, e2e=ttft + decode,
                      prompt_tokens=8000 if tenant == "slowco" else 200, completion_tokens=100,
                      service_name="ep", tenant=tenant)  # fmt: skip


def _traffic(seed: int, slow: bool = True) -> list[ServerSpan]:
    """acme 40, globex 30, tiny 6 requests (every sixth queued 3-5 s), slowco 25 (long prompts
    when ``slow``, else like the others) and four one-off tenant ids; acme, globex and tiny arrive
    first and take the three top labels, the one-offs come later (``other``)."""
    rnd = random.Random(seed)
    rest = (
        ["acme"] * 39 + ["globex"] * 29 + ["tiny"] * 5 + ["slowco"] * 25 + [f"one-off-{i}" for i in range(4)]
    )
    rnd.shuffle(rest)
    seen: dict[str, int] = defaultdict(int)
    spans = []
    for k, tenant in enumerate(["acme", "globex", "tiny", *rest]):
        seen[tenant] += 1
        decode = rnd.uniform(0.8, 1.2)
        if tenant == "slowco" and slow:  # long prompts: prefill owns its requests
            spans.append(_span(k, tenant, rnd.uniform(0.02, 0.2), rnd.uniform(1.5, 2.6), decode))
        elif seen[tenant] % 6 == 0:  # queued behind others
            spans.append(_span(k, tenant, rnd.uniform(3.0, 5.0), rnd.uniform(0.1, 0.3), decode))
        else:
            spans.append(_span(k, tenant, rnd.uniform(0.02, 0.3), rnd.uniform(0.1, 0.3), decode))
    return spans


# --- the oracle: from the spans' own attributes, by the documented definition --------------------


def _labels(spans: list[ServerSpan]) -> list[str]:
    """Each request's tenant label: a named tenant; the first TOP other tenants (one request is
    enough here); ``other`` for the rest."""
    top: list[str] = []
    out = []
    for s in spans:
        assert s.tenant is not None
        if s.tenant not in NAMED and s.tenant not in top and len(top) < TOP:
            top.append(s.tenant)
        out.append(s.tenant if s.tenant in NAMED or s.tenant in top else "other")
    return out


def _stages(s: ServerSpan, latency: str) -> tuple[float, dict[str, float]]:
    assert s.ttft is not None and s.queue is not None and s.prefill is not None and s.decode is not None
    parts = {"tokenization": s.ttft - s.queue - s.prefill, "queue": s.queue, "prefill": s.prefill}
    if latency == "ttft":
        return s.ttft, parts
    e2e = s.end - s.start
    parts["decode"] = s.decode
    return e2e, {**parts, "other": e2e - sum(parts.values())}


def _owner(spans: list[ServerSpan], latency: str) -> tuple[str, float, float]:
    """The P95+ band's owner, its share of the band's seconds and its mean seconds per request."""
    rows = [_stages(s, latency) for s in spans]
    ordered = sorted(v for v, _ in rows)
    p95 = ordered[math.ceil(0.95 * len(ordered)) - 1]
    band = [parts for v, parts in rows if v >= p95]
    total = sum(v for v, _ in rows if v >= p95)
    seconds = {st: sum(p[st] for p in band) for st in band[0]}
    owner = max(seconds, key=lambda st: seconds[st])
    return owner, seconds[owner] / total, seconds[owner] / len(band)


def _oracle(spans: list[ServerSpan]) -> tuple[dict[tuple[str, str], tuple[str, float, float]], set[str]]:
    """(tenant, latency) -> (owner, share, seconds) where it differs from the class's; the tenants
    below the floor."""
    groups: dict[str, list[ServerSpan]] = defaultdict(list)
    for s, label in zip(spans, _labels(spans), strict=True):
        groups[label].append(s)
    differ = {}
    for latency in ("ttft", "e2e"):
        whole = _owner(spans, latency)[0]
        for tenant, mine in groups.items():
            if len(mine) >= FLOOR and (got := _owner(mine, latency))[0] != whole:
                differ[(tenant, latency)] = got
    return differ, {t for t, mine in groups.items() if len(mine) < FLOOR}


# --- the service's intake, the store, the report ---------------------------------------------------


def _report(folder: Path, spans: list[ServerSpan]) -> tuple[dict[str, object], str, str, ReportData]:
    (folder / "monitor.yaml").write_text(_config(folder))
    model = load_model(folder / "monitor.yaml")
    upgrade(model.storage.url)
    store = Store(model.storage.url)
    store.apply([endpoints_op(model.endpoints)])

    async def intake() -> None:
        jobs = Jobs(model, store, Exporter(model))
        for i in range(0, len(spans), 16):  # OTLP batches as an exporter sends them
            await jobs.spans(spans[i : i + 16])
        await jobs.close()

    asyncio.run(intake())
    store.close()
    r = rendered(model, model.storage.url)
    return json.loads(r.json), r.markdown.replace("\\", ""), html.unescape(r.html), r.data


@pytest.mark.parametrize("seed", [1, 2])
def test_the_prefill_heavy_tenant_alone_is_named_with_prefill(tmp_path: Path, seed: int) -> None:
    spans = _traffic(seed)
    differ, below = _oracle(spans)
    assert {t for t, _ in differ} == {"slowco"} and below == {"tiny", "other"}  # the fixture's design
    doc, md, page, report_data = _report(tmp_path, spans)
    (chat,) = doc["tenant_tail"]  # type: ignore[misc]
    got = {(o["tenant"], o["latency"]): (o["owner"], o["share"], o["seconds"]) for o in chat["differing"]}
    assert got.keys() == differ.keys()
    for key, (owner, share, seconds) in differ.items():
        assert got[key] == (owner, pytest.approx(share, abs=1e-6), pytest.approx(seconds, abs=1e-6))
    assert chat["not_judged"] == len(below) and chat["min_requests"] == FLOOR
    assert {o["tenant"] for o in chat["judged"]} == {"acme", "globex", "slowco"}
    assert "one-off" not in json.dumps(doc)  # labels, never raw ids: the one-off tenants are "other"
    ttft = differ[("slowco", "ttft")]
    line = f"chat / slowco: prefill owns {ttft[1]:.0%} of its P95+ TTFT ({ttft[2]:.2f} s), the class's tail is queue"
    counted = f"chat: {len(below)} tenants with fewer than {FLOOR} requests not judged"
    for text in (md, page):
        assert line in text and counted in text
        assert not any(f"chat / {t}:" in text for t in ("acme", "globex", "tiny", "other"))
    slack = json.dumps(payload(report_data), ensure_ascii=False)
    assert f"• tail: {line}" in slack and not any(f"chat / {t}:" in slack for t in ("acme", "globex", "tiny"))
    cmd = [sys.executable, "-m", "monitor", "slo", "status", "-c", str(tmp_path / "monitor.yaml"), "--json",
           "--week", "2026-W48"]  # fmt: skip
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out)["tenant_tail"] == doc["tenant_tail"]  # the real CLI, the same week


def test_when_no_tenant_differs_it_says_so_in_one_line(tmp_path: Path) -> None:
    spans = _traffic(3, slow=False)
    differ, below = _oracle(spans)
    assert not differ
    doc, md, _, _ = _report(tmp_path, spans)
    assert doc["tenant_tail"][0]["differing"] == []  # type: ignore[index]
    assert "chat: the tail of each of 3 tenants has the class's owner" in md
    assert f"chat: {len(below)} tenants with fewer than {FLOOR} requests not judged" in md
