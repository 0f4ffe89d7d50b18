"""What one serving endpoint says about itself: ``/metrics``, ``/v1/models`` and ``/version``.

Read with the collector's own parts (:func:`monitor.scrape.page.parse`,
:func:`monitor.scrape.reading.read_page`, :func:`monitor.scrape.fingerprint.build`), so the
backend, name generation, block size and context length are what ``m3mon run`` will see. On top,
:func:`detect` reads the flags a page shows by the families it serves:

* speculative decoding: vLLM registers ``vllm:spec_decode_*`` only with ``--speculative-config``;
  SGLang registers its ``sglang:spec_*`` gauges either way, so there they count only when non-zero;
* a tool-call parser: vLLM 0.32 and later register ``vllm:tool_call_parser_invocations_total``
  exactly when ``--tool-call-parser`` is set (older releases and SGLang show nothing);
* LoRA: ``vllm:lora_requests_info`` (only with ``--enable-lora``), adapters from ``/v1/models``
  (the only sign on SGLang);
* images: ``vllm:mm_cache_queries_total`` above zero (images were served; zero proves nothing);
* the bucket edges of every latency histogram the collector reads, per SLI.

What cannot be read (a reasoning parser, whether a model takes images before it has served one)
is said in :attr:`Detected.unknown`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from monitor.errors import ScrapeError
from monitor.scrape.drift import Surface, surface
from monitor.scrape.fingerprint import Fingerprint, build
from monitor.scrape.interval import pick_model
from monitor.scrape.page import Page, parse
from monitor.scrape.reading import Reading, read_page
from monitor.slo.edges import families
from monitor.slo.slices import SERVER_HISTOGRAMS

#: vLLM registers the tool-parser counter exactly when --tool-call-parser is set from this release.
TOOL_PARSER_METRIC_SINCE = (0, 32)
TOOL_PARSER_METRIC = "vllm:tool_call_parser_invocations_total"
LORA_INFO = "vllm:lora_requests_info"
MM_QUERIES = "vllm:mm_cache_queries_total"
SGLANG_SPEC = ("sglang:spec_num_draft_tokens", "sglang:spec_verify_calls_total", "sglang:spec_accept_length")


@dataclass(frozen=True)
class Detected:
    """One endpoint as its pages describe it; ``None`` flags mean "the pages do not say"."""

    url: str
    fingerprint: Fingerprint
    model: str
    spec_decoding: bool | None
    tool_parser: bool | None
    lora: bool | None
    adapters: tuple[str, ...]
    images_served: bool
    #: SLI (ttft, itl, ...) -> the finite bucket edges of the histogram the collector reads for it
    edges: dict[str, tuple[float, ...]]
    #: SLI -> the exposed family those edges come from
    histograms: dict[str, str]
    notes: tuple[str, ...] = field(default=())
    #: the families and label values the page serves (what the drift guard compares needs with)
    served: Surface = field(default_factory=lambda: Surface(frozenset()))

    @property
    def backend(self) -> str:
        return self.fingerprint.backend

    @property
    def max_model_len(self) -> int | None:
        return self.fingerprint.max_model_len


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """``"0.33.0"`` -> ``(0, 33, 0)``; None when there is no leading number."""
    parts: list[int] = []
    for piece in (version or "").split("."):
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


def read(text: str) -> tuple[Page, Reading, tuple[str, ...]]:
    """The page parsed strictly, else leniently (an excerpt), with a note saying so."""
    try:
        page = parse(text)
        notes: tuple[str, ...] = ()
    except ScrapeError as exc:
        if exc.reason == "empty":
            raise
        page = parse(text if text.endswith("\n") else text.rsplit("\n", 1)[0] + "\n", partial=True)
        notes = (f"the page did not validate ({exc}); what could be read was used",)
    return page, read_page(page, 0.0), notes


def base_model(models_doc: Any) -> str | None:
    """The served model of ``/v1/models``: the first entry that is not a LoRA adapter."""
    data = models_doc.get("data") if isinstance(models_doc, dict) else None
    entries = [d for d in data if isinstance(d, dict) and d.get("id")] if isinstance(data, list) else []
    base = [d for d in entries if not d.get("parent")] or entries
    return str(base[0]["id"]) if base else None


def adapters(models_doc: Any, base: str) -> tuple[str, ...]:
    data = models_doc.get("data") if isinstance(models_doc, dict) else None
    entries = data if isinstance(data, list) else []
    return tuple(
        str(d["id"]) for d in entries if isinstance(d, dict) and d.get("parent") and d.get("id") != base
    )


def _values(page: Page, name: str) -> list[float]:
    return [s.value for s in page.samples if s.name == name]


def _spec(page: Page, backend: str, names: set[str]) -> bool | None:
    if backend == "vllm":
        return any(n.startswith("vllm:spec_decode_") for n in names)
    values = [v for n in SGLANG_SPEC for v in _values(page, n)]
    if not values:
        return None
    return any(math.isfinite(v) and v > 0 for v in values)


def _lora(backend: str, names: set[str], found: tuple[str, ...]) -> bool | None:
    if backend == "vllm" or found:
        return LORA_INFO in names or bool(found)
    return None


def _tool_parser(backend: str, names: set[str], version: str | None) -> bool | None:
    if TOOL_PARSER_METRIC in names:
        return True
    known = version_tuple(version)
    if backend == "vllm" and known is not None and known >= TOOL_PARSER_METRIC_SINCE:
        return False
    return None


def _edges(
    reading: Reading, model: str | None, names: set[str]
) -> tuple[dict[str, tuple[float, ...]], dict[str, str]]:
    """Per SLI, the edges every served layout of its histogram shares (one layout in practice)."""
    engines = [er for m, es in reading.models.items() if model is None or m == model for er in es.values()]
    edges: dict[str, tuple[float, ...]] = {}
    exposed: dict[str, str] = {}
    for sli, canonical in SERVER_HISTOGRAMS.items():
        layouts = [set(h.edges) for er in engines for (f, _), h in er.histograms.items() if f == canonical]
        if not layouts:
            continue
        shared = set.intersection(*layouts)
        edges[sli] = tuple(sorted(e for e in shared if math.isfinite(e)))
        present = [f for f in families(canonical, reading.backend) if f"{f}_bucket" in names]
        exposed[sli] = present[0] if present else canonical
    return edges, exposed


def detect(url: str, text: str, models_doc: Any = None, version_doc: Any = None) -> Detected:
    """What ``url``'s pages say; ScrapeError when the page is not a vLLM or SGLang page."""
    page, reading, notes = read(text)
    names = {s.name for s in page.samples} | set(page.types)
    served = base_model(models_doc)
    chosen = pick_model(reading, served)
    fp = build(reading, version_doc, models_doc, served or chosen)
    model = fp.model or served or chosen
    if not model:
        raise ScrapeError("garbled", f"{url}: neither /v1/models nor the page names the served model")
    edges, exposed = _edges(reading, chosen, names)
    found = adapters(models_doc, model)
    return Detected(
        url=url,
        fingerprint=fp,
        model=model,
        spec_decoding=_spec(page, fp.backend, names),
        tool_parser=_tool_parser(fp.backend, names, fp.version),
        lora=_lora(fp.backend, names, found),
        adapters=found,
        images_served=any(v > 0 for v in _values(page, MM_QUERIES)),
        edges=edges,
        histograms=exposed,
        notes=notes + tuple(reading.notes),
        served=surface(page),
    )
