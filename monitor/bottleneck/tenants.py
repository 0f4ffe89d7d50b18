"""Per tenant, the stage that owns its tail, and whether that differs from its class's.

A class's verdict reads its pool (GPUs, queue, KV cache): that evidence is the pool's, shared by
every tenant, so it has no per-tenant form. What a tenant does have is its own requests' stages.
For each class with real traffic, each tenant **label** (the one its requests were counted under by
the real-traffic SLOs: a named tenant, a top tenant or ``other``, never a raw id) and each latency
(TTFT, e2e), the tenant's **owner** is the dominant stage of its P95+ band — the same attribution
as the class's (:func:`monitor.bottleneck.tail.band_share`: the requests at or above the
nearest-rank P95 of the tenant's own requests, the stage with the most seconds in them, ``other``
included). A tenant is judged for a latency only with :data:`MIN_TENANT_REQUESTS` attributed
requests (the band floor of :mod:`monitor.bottleneck.tail`: its P95+ band then holds two
requests); a tenant judged for neither latency is counted, not judged. A tenant's tail
**differs** when its owner is not the class's owner of the same latency over all its requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from monitor.bottleneck.tail import MIN_BAND, STAGES, TRAFFIC, Sample, band_share, usable

#: Attributed requests a tenant needs before its tail is judged (the P95+ band's floor).
MIN_TENANT_REQUESTS = MIN_BAND["p95"]


@dataclass(frozen=True)
class TenantOwner:
    """The stage owning one tenant's P95+ band of one latency, against its class's."""

    request_class: str
    tenant: str
    metric: str  # "ttft" or "e2e"
    requests: int  # the tenant's attributed requests for this latency
    owner: str  # a stage of :data:`monitor.bottleneck.tail.STAGES`, or ``other``
    share: float  # the owner's share of the band's seconds
    seconds: float  # the owner's mean seconds per request of the band
    class_owner: str | None  # the class's owner of the same latency (None: not attributed)

    @property
    def differs(self) -> bool:
        return self.owner != self.class_owner


@dataclass(frozen=True)
class TenantTails:
    """One class's tenants: every judged (tenant, latency) and how many tenants were not judged."""

    request_class: str
    judged: tuple[TenantOwner, ...]
    tenants: int  # tenant labels with real requests in the class
    below_floor: int  # of them, judged for no latency: fewer than MIN_TENANT_REQUESTS requests

    @property
    def differing(self) -> tuple[TenantOwner, ...]:
        """The judged tails whose owner differs from the class's, most owner seconds first."""
        return tuple(sorted((o for o in self.judged if o.differs), key=lambda o: (-o.seconds, o.tenant)))


def _by_tenant(samples: Sequence[Sample]) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    for s in samples:
        if s.tenant is not None:
            out.setdefault(s.tenant, []).append(s)
    return out


def class_tenants(cls: str, samples: Sequence[Sample]) -> TenantTails | None:
    """The class's tenant tails (None: no request of the class carries a tenant label)."""
    mine = [s for s in samples if s.request_class == cls]
    tenants = _by_tenant(mine)
    if not tenants:
        return None
    judged: list[TenantOwner] = []
    for metric in STAGES:
        whole = band_share(cls, mine, metric, "p95", TRAFFIC)
        for tenant, rows in sorted(tenants.items()):
            t = band_share(cls, rows, metric, "p95", TRAFFIC)
            owner = t.dominant
            if owner is None:
                continue
            share = dict(t.shares)[owner]
            n = len(usable(rows, metric))
            judged.append(
                TenantOwner(cls, tenant, metric, n, owner, share, t.seconds(owner) or 0.0, whole.dominant)
            )
    seen = {o.tenant for o in judged}
    return TenantTails(cls, tuple(judged), len(tenants), sum(t not in seen for t in tenants))


def tenant_tails(classes: Sequence[str], samples: Sequence[Sample]) -> tuple[TenantTails, ...]:
    """Every class's tenant tails, in ``classes``' order (classes without tenant labels left out)."""
    return tuple(t for cls in classes if (t := class_tenants(cls, samples)) is not None)
