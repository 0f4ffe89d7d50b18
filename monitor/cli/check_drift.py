"""``m3mon check-config --metrics``: the drift guard's lines for one endpoint's page.

What the endpoint's generated rules, SLOs and dashboards read (:mod:`monitor.generate.needs`)
against what its page serves (:mod:`monitor.scrape.drift`): every line says which family, who
needs it and why it is missing, with what to do. All lines say ``drift:`` after their level.
"""

from __future__ import annotations

from monitor.model import Endpoint, Model


def drift_lines(model: Model, endpoint: Endpoint, text: str) -> tuple[list[str], bool]:
    """The drift guard's lines for one page (:mod:`monitor.scrape.drift`): an ``error:`` for a
    family an SLO's rules read that the page does not serve (the SLO gets no events from it), a
    ``warning:`` for one only alerts or dashboards read; and whether any was an error."""
    from monitor.generate.needs import needs
    from monitor.scrape.drift import assess, surface, unserved
    from monitor.scrape.page import parse

    drifts = assess(endpoint.name, needs(model, endpoint), surface(parse(text, partial=True)))
    out, blind = [], False
    for d in unserved(drifts):
        slo = any(u.startswith("SLO ") for u in d.users)
        blind = blind or slo
        out.append(f"{'error' if slo else 'warning'}: drift: {d.line()}")
    served = len(drifts) - len(out)
    summary = f"{served} of {len(drifts)} families its rules, SLOs and dashboards read are served"
    out.insert(0, f"ok: drift: {endpoint.name}: {summary}")
    return out, blind
