"""What the demo's report must show of its tenants, from the simulator's tenant mix definition.

The oracle is :class:`~monitor.sim.tenants.TenantMix` itself, not the report code: its slow tenant
sends long prompts and long answers (in the demo one request in six, more than the 5 % a 95 %
objective allows), so its goodput SLO is the worst of the Tenants section and misses its
objective, while each heavy tenant (short answers) meets it; and the slow tenant's end-to-end tail
(its slowest 5 %, all long answers) is owned by decoding, as the per-tenant tail says.
"""

from __future__ import annotations

from typing import Any

from monitor.sim.tenants import TenantMix

MIX = TenantMix()  # tenant names and who is slow; the demo's mix differs only in answer lengths


def check_tenants(doc: dict[str, Any]) -> None:
    """Assert the report (``report.json`` as a dict) tells the tenants' story."""
    sections = [t for t in doc.get("tenants", []) if t["scope"] == "tenant"]
    assert sections, "the report has no SLO declared per tenant"
    (section,) = sections
    worst = section["worst"]
    tenants = [w["tenant"] for w in worst]
    assert MIX.slow in tenants[:10] and tenants[0] == MIX.slow, tenants
    slow = worst[0]
    assert slow["attainment"] is not None and slow["attainment"] < slow["objective"], slow
    assert slow["status"] != "met", slow
    by_tenant = {w["tenant"]: w for w in worst}
    for name in MIX.heavy:
        heavy = by_tenant[name]
        assert heavy["attainment"] is not None and heavy["attainment"] >= heavy["objective"], heavy
    tails = [t for t in doc.get("tenant_tail", []) if t["class"] == section["class"]]
    assert tails, "no per-tenant tail for the traffic class"
    owners = {(j["tenant"], j["latency"]): j["owner"] for j in tails[0]["judged"]}
    assert owners.get((MIX.slow, "e2e")) == "decode", owners
