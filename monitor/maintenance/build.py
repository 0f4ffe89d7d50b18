"""From the maintenance specs to the frozen :class:`~monitor.maintenance.calendar.Maintenance`.

``served`` maps each endpoint to the classes it serves (from the config). Unknown class or
endpoint names, and a window that ends up applying to nothing, are problems naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from monitor.maintenance.calendar import Maintenance, MaintenanceWindow, Target
from monitor.maintenance.spec import MaintenanceSpec

Problem = tuple[tuple[str | int, ...], str]


def targets(spec: MaintenanceSpec, served: Mapping[str, Sequence[str]]) -> frozenset[Target]:
    """The (class, endpoint) pairs a window applies to."""
    endpoints = spec.endpoints or list(served)
    return frozenset(
        (c, e) for e in endpoints for c in served.get(e, ()) if not spec.classes or c in spec.classes
    )


def problems(specs: Sequence[MaintenanceSpec], served: Mapping[str, Sequence[str]]) -> list[Problem]:
    """Names that are not in the config, duplicate windows, windows applying to nothing."""
    out: list[Problem] = []
    classes = {c for cs in served.values() for c in cs}
    known_classes, known_endpoints = ", ".join(sorted(classes)), ", ".join(sorted(served))
    names = [s.name for s in specs]
    for i, spec in enumerate(specs):
        before = len(out)
        if spec.name in names[:i]:
            out.append(((i, "name"), f"duplicate maintenance window {spec.name!r}"))
        for j, c in enumerate(spec.classes):
            if c not in classes:
                out.append(((i, "classes", j), f"unknown request class {c!r}; known: {known_classes}"))
        for j, e in enumerate(spec.endpoints):
            if e not in served:
                out.append(((i, "endpoints", j), f"unknown endpoint {e!r}; known: {known_endpoints}"))
        if len(out) == before and not targets(spec, served):
            out.append(((i, "endpoints"), "no endpoint listed here serves any class listed in 'classes'"))
    return out


def window(spec: MaintenanceSpec, served: Mapping[str, Sequence[str]]) -> MaintenanceWindow:
    pairs = targets(spec, served)
    whole = frozenset(
        c for c in {c for c, _ in pairs} if all((c, e) in pairs for e, cs in served.items() if c in cs)
    )
    whole_endpoints = frozenset(
        e for e in {e for _, e in pairs} if all((c, e) in pairs for c in served.get(e, ()))
    )
    return MaintenanceWindow(
        name=spec.name,
        first_start=spec.local_start,
        seconds=spec.seconds,
        targets=pairs,
        rule_text=spec.rrule,
        reason=spec.reason,
        classes=tuple(spec.classes),
        endpoints=tuple(spec.endpoints),
        whole_classes=whole,
        whole_endpoints=whole_endpoints,
    )


def build_maintenance(specs: Sequence[MaintenanceSpec], served: Mapping[str, Sequence[str]]) -> Maintenance:
    """Freeze validated specs (check :func:`problems` first)."""
    return Maintenance(tuple(window(s, served) for s in specs))
