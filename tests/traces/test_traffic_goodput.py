"""Goodput of real traffic, judged once and counted twice: the exporter's counters and the store's
slices against an oracle written from docs/slo-events.md ("Goodput of real traffic"); the tenant
labels' cap as a property; the simulator's tenant-tagged spans; the configuration's checks."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from monitor.config import parse_config
from monitor.errors import ConfigError
from monitor.exporter import Exporter
from monitor.model import build_model
from monitor.model_traffic import Traffic
from monitor.sim.harness import running_simulator
from monitor.sim.tenants import TenantMix
from monitor.slo.traffic import TrafficJudge, traffic_slices
from monitor.traces.span import ServerSpan
from monitor.traces.tenants import TenantLabels
from tests.sim.conftest import FAST
from tests.support import localhttp

CONFIG = """version: m3mon/v1
endpoints:
  - {name: pool, base_url: "http://127.0.0.1:9", model: m, classes: [chat], span_service_name: gw}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: ttft, sli: ttft, threshold: 1s, objective: 99}
      - {name: e2e, sli: e2e, threshold: 4s, objective: 99, source: server}
      - {name: goodput, sli: goodput, objective: 95, source: traffic, tenants: [acme, other],
         priorities: [high, normal]}
      - {name: all, sli: goodput, objective: 95, source: traffic}
traffic:
  tenants: [acme]
  priority_bands: [{name: high, up_to: -1}, {name: normal}]
"""
TTFT, E2E = 1.0, 4.0  # the class's limits, as CONFIG states them


def _span(
    i: int, tenant: str | None, priority: float | None, ttft: float, e2e: float, out: int
) -> ServerSpan:
    return ServerSpan(f"{i + 1:032x}", f"{i + 1:016x}", "llm_request", 1000.0, 1000.0 + e2e, ttft=ttft, e2e=e2e,
                      prompt_tokens=10, completion_tokens=out, service_name="gw", tenant=tenant, priority=priority)  # fmt: skip


SPANS = st.lists(
    st.tuples(
        st.sampled_from(["acme", "beta", "gamma", None]),
        st.sampled_from([-5.0, -1.0, 0.0, 3.0, None]),
        st.sampled_from([0.2, 1.0, 1.5]),
        st.sampled_from([0.5, 4.0, 6.0]),
        st.sampled_from([0, 1, 30]),
    ),
    max_size=40,
)


def _oracle(
    spans: list[tuple[str | None, float | None, float, float, int]],
) -> dict[str, tuple[float, float]]:
    """SLO name -> (good, total): good when it produced output within every limit; its tenant is
    itself when named (acme), else other; band high up to priority -1, normal above (none: 0)."""
    out: Counter[tuple[str, bool]] = Counter()
    for tenant, priority, ttft, e2e, tokens in spans:
        good = tokens > 0 and ttft <= TTFT and e2e <= E2E
        label = "acme" if tenant == "acme" else "other"
        band = "high" if (priority if priority is not None else 0.0) <= -1 else "normal"
        for name in (f"goodput.{label}.{band}", "all"):
            out[(name, good)] += 1
    names = {n for n, _ in out}
    return {n: (float(out[(n, True)]), float(out[(n, True)] + out[(n, False)])) for n in names}


@settings(max_examples=40, deadline=None)
@given(SPANS, st.sets(st.integers(0, 39)))
def test_counters_and_slices_agree_with_the_oracle(
    spans: list[tuple[str | None, float | None, float, float, int]], probes: set[int]
) -> None:
    model = build_model(parse_config(CONFIG))
    exporter = Exporter(model)
    made = [_span(i, *s) for i, s in enumerate(spans)]
    probe_traces = {made[i].trace_id for i in probes if i < len(made)}
    found = TrafficJudge(model).verdicts(made, probe_traces.__contains__)
    exporter.traffic.observe(((j.endpoint, j.request_class, j.labels) for j in found.judged), found.unrouted)
    slices = {s.slo_id.split("/")[1]: (s.good, s.total) for s in traffic_slices(model, found.judged, 2000.0)}
    expected = _oracle([s for i, s in enumerate(spans) if i not in probes])
    assert slices == expected
    counted: Counter[tuple[str, bool]] = Counter()
    for metric in exporter.registry.collect():
        for sample in metric.samples:
            if sample.name == "m3mon_traffic_requests_total":
                labels = sample.labels
                name = f"goodput.{labels['tenant']}.{labels['priority']}"
                counted[(name, labels["good"] == "true")] += int(sample.value)
    from_counters = {n: (float(counted[(n, True)]), float(counted[(n, True)] + counted[(n, False)]))
                     for n, _ in counted if counted[(n, True)] + counted[(n, False)]}  # fmt: skip
    assert from_counters == {k: v for k, v in expected.items() if k != "all"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([f"t{i}" for i in range(30)]) | st.text(max_size=8), max_size=300),
       st.integers(0, 4), st.integers(1, 5))  # fmt: skip
def test_tenant_labels_stay_within_the_cap(ids: list[str], top: int, minimum: int) -> None:
    labels = TenantLabels(Traffic(tenants=("t0", "t1"), top_tenants=top, min_tenant_requests=minimum))
    given_labels = [labels.label(i) for i in ids]
    assert len(set(given_labels) | {"other"}) <= labels.traffic.tenant_cap
    assert all(g == i for i, g in zip(ids, given_labels, strict=True) if i in ("t0", "t1"))
    assert all(g in (i, "other") for i, g in zip(ids, given_labels, strict=True))
    assert labels.folded_requests == given_labels.count("other")
    first = {i: n for n, i in reversed(list(enumerate(ids)))}
    for i in set(given_labels) - {"other", "t0", "t1"}:  # a label once given is kept
        since = [g for j, g in enumerate(given_labels) if ids[j] == i and j >= given_labels.index(i)]
        assert set(since) == {i} and first[i] <= given_labels.index(i)


def test_ten_thousand_invented_ids_leave_a_busy_tenant_its_label() -> None:
    labels = TenantLabels(Traffic(tenants=("acme",), top_tenants=1, min_tenant_requests=20))
    out = set()
    for i in range(10_000):
        out.add(labels.label(f"invented-{i}"))
        if i % 20 == 0:  # 5 % of the requests: more than one in the 64 candidates' table
            out.add(labels.label("busy"))
    assert out == {"other", "busy"} and labels.labels_in_use == 3
    assert len(labels.folded_ids) == 10_000 + 1  # busy was folded until it had sent 20


def test_simulator_tags_spans_with_tenant_and_priority() -> None:
    exporter = InMemorySpanExporter()
    (req,) = TenantMix(seed=1, heavy=("acme",), heavy_share=1.0, slow_share=0.0, tail=1).requests(1)
    with running_simulator(span_exporter=exporter, tenant_span_attributes=True, **FAST) as sim:
        assert (
            localhttp.post(f"{sim.base_url}/v1/chat/completions", json=req.body, timeout=20).status_code
            == 200
        )
        deadline = time.monotonic() + 5
        while not exporter.get_finished_spans():
            assert time.monotonic() < deadline
            time.sleep(0.01)
    (span,) = exporter.get_finished_spans()
    a = span.attributes or {}
    assert (a["user.id"], a["vllm.request.priority"]) == ("acme", req.priority)


def test_mix_is_skewed_with_one_slow_tenant() -> None:
    mix = TenantMix(seed=2)
    sent = Counter(r.tenant for r in mix.requests(2000))
    assert sum(sent[t] for t in mix.heavy) > 0.5 * 2000
    assert len([t for t in sent if t.startswith("tail-")]) > 20
    slow = {r.body["max_tokens"] for r in mix.requests(200) if r.tenant == mix.slow}
    assert slow == {mix.slow_tokens} and mix.slow_tokens > 10 * mix.tokens


@pytest.mark.parametrize(
    ("slo", "traffic", "message"),
    [
        ("{name: g, sli: goodput, objective: 95, source: traffic, tenants: [zeta]}", "{}", "not in traffic.tenants"),
        ("{name: g, sli: ttft, threshold: 1s, objective: 95, source: traffic}", "{}", "goodput only"),
        ("{name: g, sli: goodput, objective: 95, tenants: [other]}", "{}", "need source: traffic"),
        ("{name: g, sli: goodput, objective: 95, source: traffic, priorities: [low]}",
         "{priority_bands: [{name: high, up_to: 0}, {name: rest}]}", "not in traffic.priority_bands"),
        ("{name: g, sli: goodput, objective: 95, source: traffic}", "{tenants: [other]}", "not a tenant"),
        ("{name: g, sli: goodput, objective: 95, source: traffic}",
         "{priority_bands: [{name: a}, {name: b, up_to: 1}]}", "only the last band"),
    ],
)  # fmt: skip
def test_configuration_errors(slo: str, traffic: str, message: str) -> None:
    text = CONFIG.split("    slos:")[0] + f"    slos:\n      - {slo}\ntraffic: {traffic}\n"
    with pytest.raises(ConfigError, match=message):
        parse_config(text)
