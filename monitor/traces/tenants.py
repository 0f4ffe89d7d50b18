"""A request's tenant label, from a bounded set whatever tenant ids the clients send.

Label values (docs/traces.md, "Tenants and priorities"), at most
:attr:`~monitor.model.Traffic.tenant_cap` of them:

* a tenant named in ``traffic.tenants`` is its own label;
* up to ``traffic.top_tenants`` other tenants get their own label: the first to have sent
  ``min_tenant_requests`` requests while a label is free. A label once given is kept until the
  process restarts (a label that came and went would be a new series each time);
* every other tenant, and a request naming none, is ``other``.

Requests are counted with Space-Saving (Metwally et al., 2005) in a table of at most
``max(MIN_CANDIDATES, CANDIDATES_PER_SLOT * top_tenants)`` tenant ids: a tenant id not in a full
table replaces the least-counted entry and inherits its count (+1) as its possible error, so any
tenant sending more than one request in ``capacity`` stays in the table, memory stays bounded,
and a tenant is admitted on its *guaranteed* count (count − error): ids seen once each (a client
inventing ids) never reach ``min_tenant_requests``, however many there are. Distinct ids folded into
``other`` are counted exactly up to :data:`~monitor.conventions.TENANTS_FOLDED_COUNTED` (a set of
their hashes), then no further.
"""

from __future__ import annotations

import hashlib
from typing import Final

from monitor.conventions import TENANT_OTHER, TENANTS_FOLDED_COUNTED
from monitor.model_traffic import Traffic

#: Tenant ids whose request counts are kept to find the busiest (per top slot, at least 64).
CANDIDATES_PER_SLOT: Final = 8
MIN_CANDIDATES: Final = 64


class TenantLabels:
    """Assigns each request's tenant a label value; counts what it folds into ``other``."""

    def __init__(self, traffic: Traffic) -> None:
        self.traffic = traffic
        self.named = frozenset(traffic.tenants)
        self.admitted: set[str] = set()
        self.counts: dict[str, list[int]] = {}  # tenant id -> [count, possible overcount]
        self.capacity = max(MIN_CANDIDATES, CANDIDATES_PER_SLOT * traffic.top_tenants)
        self.folded_ids: set[bytes] = set()
        self.folded_requests = 0

    @property
    def labels_in_use(self) -> int:
        """Distinct label values this process can have published: named, admitted, ``other``."""
        return len(self.named) + len(self.admitted) + 1

    def label(self, tenant: str | None) -> str:
        """The label value of a request from ``tenant`` (None: it named no tenant)."""
        if tenant is not None and (tenant in self.named or tenant in self.admitted):
            return tenant
        if tenant is not None and self.traffic.top_tenants and self._counted(tenant):
            return tenant
        self.folded_requests += 1
        if tenant is not None and len(self.folded_ids) < TENANTS_FOLDED_COUNTED:
            self.folded_ids.add(hashlib.blake2b(tenant.encode(), digest_size=8).digest())
        return TENANT_OTHER

    def _counted(self, tenant: str) -> bool:
        """Count one request of ``tenant``; True when that admits it to a top label."""
        entry = self.counts.get(tenant)
        if entry is not None:
            entry[0] += 1
        else:
            floor = 0
            if len(self.counts) >= self.capacity:
                victim = min(self.counts, key=lambda t: self.counts[t][0])
                floor = self.counts.pop(victim)[0]
            entry = self.counts[tenant] = [floor + 1, floor]
        guaranteed = entry[0] - entry[1]
        if len(self.admitted) >= self.traffic.top_tenants or guaranteed < self.traffic.min_tenant_requests:
            return False
        self.admitted.add(tenant)
        del self.counts[tenant]
        return True
