"""The frozen model of how real traffic's spans are attributed: tenant and priority attributes,
the tenants that keep a label of their own and the priority bands (docs/traces.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traffic:
    """Where real requests' tenant and priority come from, and which tenants keep their own label.

    At most :attr:`tenant_cap` tenant label values exist: the named ``tenants``, up to
    ``top_tenants`` of the busiest others, and ``other`` for the rest.
    """

    tenant_attributes: tuple[str, ...] = ("tenant.id", "user.id")
    priority_attribute: str = "vllm.request.priority"
    default_priority: float = 0.0
    tenants: tuple[str, ...] = ()
    top_tenants: int = 0
    min_tenant_requests: int = 100
    #: (band, highest priority in it; None: unbounded), ascending; () is one band, ``all``.
    priority_bands: tuple[tuple[str, float | None], ...] = ()

    @property
    def tenant_cap(self) -> int:
        return len(self.tenants) + self.top_tenants + 1

    def band(self, priority: float | None) -> str:
        """The band of a request with ``priority`` (None: the default priority)."""
        value = self.default_priority if priority is None else priority
        for name, up_to in self.priority_bands:
            if up_to is None or value <= up_to:
                return name
        return self.priority_bands[-1][0] if self.priority_bands else "all"
