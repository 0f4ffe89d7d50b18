"""Goodput of real traffic, per tenant, through ``m3mon run`` and a real Prometheus.

A simulator tags each request's span with its tenant and priority (``tenant_span_attributes``) and
exports it to the monitor; a skewed mix of tenants (:class:`~monitor.sim.tenants.TenantMix`, one
of them long and slow) is sent while the monitor's own probes run against the same server. Three
counts of every ``source: traffic`` SLO must agree: the store's slices, the generated rules' step
records summed in Prometheus, and an oracle written here from docs/slo-events.md ("Goodput of real
traffic") over the simulator's ground truth of the requests this test sent (probe traffic is no
event). The slow tenant burns its own budget (its page alert fires) while the others stay green.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from monitor.sim.harness import running_simulator
from monitor.sim.tenants import Sent, TenantMix, send
from monitor.store.tables import EventSliceRow
from tests.e2e.servers import free_port
from tests.e2e.stack import SIM, Stack, endpoint, request_class, running_stack, wait_until

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(240)]

CLASS = "chat-32k"
E2E_LIMIT = 1.0  # seconds: the class's only latency limit, so goodput's only one
NAMED = ["acme", "globex", "slowco"]
SLOS = [
    {"name": "availability", "sli": "availability", "objective": 95},
    {"name": "e2e", "sli": "e2e", "threshold": f"{E2E_LIMIT:g}s", "objective": 95},
    {"name": "goodput", "sli": "goodput", "objective": 95, "source": "traffic",
     "tenants": [*NAMED, "other"], "min_events": 5},
    {"name": "goodput-all", "sli": "goodput", "objective": 95, "source": "traffic", "min_events": 5},
]  # fmt: skip
TRAFFIC = {"traffic": {"tenants": NAMED, "top_tenants": 2,
                       "priority_bands": [{"name": "high", "up_to": -1}, {"name": "normal"}]}}  # fmt: skip
#: 2400 output tokens at the stack's 3 ms per decode step, up to 4 tokens a step (speculative
#: decoding): at least 1.8 s, beyond the limit; the others' 16 tokens take ~50 ms.
MIX = TenantMix(tail=20, slow_tokens=2400, slow_prompt_words=500, seed=3)
REQUESTS = 240


def oracle(sent: list[Sent], truth: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """SLO name -> (valid, bad) from the definition: a request is good when it produced output and
    its server-side e2e (arrival to finish) is within the limit; its tenant is its own label when
    named in ``traffic.tenants``, else ``other`` (no tail tenant reaches 100 requests)."""
    by_trace = {t["trace_id"]: t for t in truth if t["trace_id"]}
    counts: Counter[tuple[str, bool]] = Counter()
    for s in sent:
        t = by_trace[s.trace_id]
        e2e = t["finish"]["mono"] - t["arrival"]["mono"]
        good = t["completion_tokens"] > 0 and e2e <= E2E_LIMIT
        counts[(s.tenant if s.tenant in NAMED else "other", good)] += 1
    out = {}
    for tenant in [*NAMED, "other"]:
        good, bad = counts[(tenant, True)], counts[(tenant, False)]
        out[f"goodput.{tenant}"] = (good + bad, bad)
    out["goodput-all"] = (sum(v for v, _ in out.values()), sum(b for _, b in out.values()))
    return out


def store_counts(st: Stack) -> dict[str, tuple[int, int]]:
    with st.db() as s:
        rows = s.execute(select(EventSliceRow.slo_id, EventSliceRow.good, EventSliceRow.total)
                         .where(EventSliceRow.origin == "traffic")).all()  # fmt: skip
    out: dict[str, list[float]] = {}
    for slo_id, good, total in rows:
        acc = out.setdefault(slo_id.split("/", 1)[1], [0.0, 0.0])
        acc[0] += total
        acc[1] += total - good
    return {k: (round(v), round(b)) for k, (v, b) in out.items()}


def rule_counts(st: Stack) -> dict[str, tuple[int, int]]:
    """The rules' count of each SLO's events: its step records summed over the run (the traffic
    starts once every SLO has a first reading, so the steps hold every request)."""

    def summed(kind: str) -> dict[str, int]:
        found = st.query(f'sum by (slo) (sum_over_time(m3mon:slo_events_{kind}:step{{class="{CLASS}"}}[1h]))')
        return {r["metric"]["slo"]: round(float(r["value"][1])) for r in found}

    valid, bad = summed("valid"), summed("bad")
    return {k: (v, bad.get(k, 0)) for k, v in valid.items() if k.startswith("goodput")}


def test_tenants_goodput_agrees_and_the_slow_tenant_burns_alone(tmp_path: Path) -> None:
    port = free_port()
    traces = f"http://127.0.0.1:{port}/v1/traces"
    with running_simulator(**SIM, otlp_traces_endpoint=traces, tenant_span_attributes=True) as sim:
        eps = [endpoint("pool", sim.base_url, [CLASS], span_service_name="vllm-server")]
        with running_stack(
            tmp_path, eps, [request_class(CLASS, ["chat"], SLOS)], port=port, extra=TRAFFIC
        ) as st:
            # the rules count rises from a recorded reading: traffic starts once they have one
            recorded = 'count(count by (slo) (m3mon:slo_events_valid:cumulative{slo=~"goodput.*"})) == 5'
            wait_until(lambda: st.query(recorded), 30, "every traffic SLO's first reading recorded")
            sent = asyncio.run(send(sim.base_url, MIX.requests(REQUESTS), concurrency=8, seed=5))
            assert {s.status for s in sent} == {200}
            expected = oracle(sent, sim.truth()["requests"])
            wait_until(lambda: st.total("m3mon_traffic_requests_total") >= REQUESTS, 30, "every span counted")
            for counts in (rule_counts, store_counts):
                try:
                    wait_until(
                        lambda c=counts: c(st) == expected, 60, f"{counts.__name__} to reach the oracle's"
                    )
                except AssertionError:
                    raise AssertionError((counts.__name__, counts(st), expected)) from None
            firing = wait_until(
                lambda: st.prom_alerts("SLOErrorBudgetBurnPage"), 60, "the slow tenant's page"
            )
            ratios = {r["metric"]["slo"]: float(r["value"][1])
                      for r in st.query(f'm3mon:slo_error_ratio:rate1h{{class="{CLASS}"}}')}  # fmt: skip
            alerts = st.all_prom_alerts()
            assert st.total("m3mon_traffic_requests_total") == REQUESTS  # probe spans are no events
            assert st.total("m3mon_traffic_unrouted_total") == 0
    assert {a["labels"]["slo"] for a in firing} == {"goodput.slowco"}
    assert expected["goodput.slowco"][1] == expected["goodput.slowco"][0] > 5  # every slow request bad
    assert all(expected[f"goodput.{t}"][1] == 0 for t in ("acme", "globex", "other"))
    assert ratios["goodput.slowco"] == 1.0 and all(
        ratios[f"goodput.{t}"] == 0 for t in ("acme", "globex", "other")
    )
    burning = {
        a["labels"].get("slo") for a in alerts if a["labels"]["alertname"].startswith("SLOErrorBudgetBurn")
    }
    assert burning <= {"goodput.slowco", "goodput-all"}, alerts
