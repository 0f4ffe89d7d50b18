"""How the simulator's ``/metrics`` differs from a real vLLM's, and which differences are explained.

:func:`shapes` reduces a page to its ``vllm:`` families' shapes (type, label names, histogram
bucket edges); :func:`differences` lists every way two pages' shapes differ, one
``(family, aspect)`` per difference. :data:`EXPLAINED` is the reviewed list of differences between
the simulator (vLLM 0.33.0 surface, MiniMax M3 on GPUs) and the real vLLM 0.32.0 CPU server of the
conformance tier (tests/real_vllm/test_simulator_surface.py), each with its reason; it is also
the table in docs/simulator.md. Label *values* are never compared (model names, engine ids, the
cache configuration differ per deployment), and the simulator under comparison is started with
the real server's ``--max-model-len``, so the token histograms' 1-2-5 edges must agree.

Pages are read with prometheus_client's parser, not the monitor's (``monitor.scrape.page``): the
simulator is the monitor's test double, so it must not share the monitor's view of vLLM's page,
or a simulator-versus-real comparison could agree by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from prometheus_client.parser import text_string_to_metric_families

Aspect = str  # "only_real", "only_sim", "type", "labels", "buckets"


@dataclass(frozen=True)
class Shape:
    kind: str
    labels: frozenset[str]
    buckets: tuple[float, ...] = ()


#: Families compared: vLLM's own, the HTTP instrumentator's and the process collector's.
PREFIXES: Final = ("vllm:", "http_", "process_")


def shapes(text: str) -> dict[str, Shape]:
    """Family -> :class:`Shape` of a page's :data:`PREFIXES` families (``_created`` companions
    dropped), named as the page's ``# TYPE`` line names them (a counter with its ``_total``)."""
    out: dict[str, Shape] = {}
    for family in text_string_to_metric_families(text):
        names = {s.name for s in family.samples}
        bare = bool(names) and f"{family.name}_total" not in names  # a counter exposed without _total
        key = f"{family.name}_total" if family.type == "counter" and not bare else family.name
        if not key.startswith(PREFIXES) or key.endswith("_created"):
            continue
        samples = [s for s in family.samples if not s.name.endswith("_created")]
        labels = frozenset(k for s in samples for k in s.labels if k != "le")
        edges = sorted(
            {float(s.labels["le"]) for s in samples if s.name.endswith("_bucket") and "le" in s.labels}
        )
        out[key] = Shape(family.type, labels, tuple(edges))
    return dict(sorted(out.items()))


def differences(real: dict[str, Shape], sim: dict[str, Shape]) -> set[tuple[str, Aspect]]:
    """Every ``(family, aspect)`` in which the simulator's shapes differ from the real server's."""
    out = {(f, "only_real") for f in real.keys() - sim.keys()}
    out |= {(f, "only_sim") for f in sim.keys() - real.keys()}
    for f in real.keys() & sim.keys():
        r, s = real[f], sim[f]
        for aspect, a, b in (("type", r.kind, s.kind), ("labels", r.labels, s.labels),
                             ("buckets", r.buckets, s.buckets)):  # fmt: skip
            if a != b:
                out.add((f, aspect))
    return out


_V032 = (
    "vLLM 0.32 cost-model (MFU) counter, gone in 0.33 which the simulator imitates; not read by the monitor"
)

#: The reviewed differences: (family, aspect) -> why the simulator may differ there.
EXPLAINED: Final[dict[tuple[str, Aspect], str]] = {
    ("vllm:estimated_flops_per_gpu_total", "only_real"): _V032,
    ("vllm:estimated_read_bytes_per_gpu_total", "only_real"): _V032,
    ("vllm:estimated_write_bytes_per_gpu_total", "only_real"): _V032,
}
