"""How the simulator's ``/metrics`` differs from a real vLLM's, and which differences are explained.

:func:`shapes` reduces a page to its ``vllm:`` families' shapes (type, label names, histogram
bucket edges); :func:`differences` lists every way two pages' shapes differ, one
``(family, aspect)`` per difference. :data:`EXPLAINED` is the reviewed list of differences between
the simulator (vLLM 0.33.0 surface, MiniMax M3 on GPUs) and the real vLLM 0.32.0 CPU server of the
conformance tier (tests/real_vllm/test_simulator_surface.py), each with its reason; it is also
the table in docs/simulator.md. Label *values* are never compared (model names, engine ids, the
cache configuration differ per deployment), and the simulator under comparison is started with
the real server's ``--max-model-len``, so the token histograms' 1-2-5 edges must agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from monitor.scrape.page import parse

Aspect = str  # "only_real", "only_sim", "type", "labels", "buckets"


@dataclass(frozen=True)
class Shape:
    kind: str
    labels: frozenset[str]
    buckets: tuple[float, ...] = ()


#: Families compared: vLLM's own, the HTTP instrumentator's and the process collector's.
PREFIXES: Final = ("vllm:", "http_", "process_")


def shapes(text: str) -> dict[str, Shape]:
    """Family -> :class:`Shape` of a page's :data:`PREFIXES` families (``_created`` companions dropped)."""
    page = parse(text, parser="reference", partial=True)
    labels: dict[str, set[str]] = {}
    buckets: dict[str, set[float]] = {}
    families = {f for f in page.types if f.startswith(PREFIXES) and not f.endswith("_created")}
    for s in page.samples:
        family = _family(s.name, families)
        if family is None:
            continue
        labels.setdefault(family, set()).update(k for k in s.labels if k != "le")
        if s.name.endswith("_bucket") and "le" in s.labels:
            buckets.setdefault(family, set()).add(float(s.labels["le"]))
    return {
        f: Shape(page.types[f], frozenset(labels.get(f, ())), tuple(sorted(buckets.get(f, ()))))
        for f in sorted(families)
    }


def _family(sample: str, families: set[str]) -> str | None:
    if sample in families:
        return sample
    for suffix in ("_bucket", "_sum", "_count", "_total"):
        base = sample.removesuffix(suffix)
        if base != sample and base in families:
            return base
    return None


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
