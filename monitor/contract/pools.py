"""Configuration findings about pools that the contract and ``m3mon profile`` rely on.

``dedicated_pool: true`` tells :mod:`monitor.replay.learn` (and the contract's context ceiling)
that the pool's server histograms of prompt and generation tokens are this class's traffic. When
the pool also serves other classes, those histograms mix their traffic in: ``m3mon check-config``
warns (:func:`shared_dedicated_pools`).
"""

from __future__ import annotations

from monitor.model import Model


def shared_dedicated_pools(model: Model) -> list[str]:
    """One ``warning:`` line per class marked ``dedicated_pool`` whose endpoint serves others too."""
    out = []
    for rc in model.classes:
        if not rc.dedicated_pool:
            continue
        for endpoint in model.endpoints_for(rc.name):
            others = [c for c in endpoint.classes if c != rc.name]
            if others:
                out.append(
                    f"warning: {rc.name}: dedicated_pool is true but its pool {endpoint.name} also serves "
                    f"{', '.join(others)}; the pool's token histograms mix their traffic into this "
                    "class's learned profile and context ceiling, so m3mon profile should use its probe "
                    "runs instead: set dedicated_pool: false, or give the class its own endpoint"
                )
    return out
