"""The starter plan as commented YAML (``version: m3mon/v1``), every choice with its reason.

:func:`render` returns the text; :func:`monitor.config.parse_config` validates it before anything
is written (a plan the schema refuses is a bug here, not the user's problem).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator, Sequence

from monitor.conventions import M3_BLOCK_SIZE
from monitor.starter.detect import Detected
from monitor.starter.plan import PROBE_INTERVAL, PROBE_TIMEOUT, Pool, SLOChoice, seconds

SCRAPE_INTERVAL = "15s"
WIDTH = 100


def comment(text: str, indent: int) -> list[str]:
    pad = " " * indent
    return textwrap.wrap(text, WIDTH, initial_indent=f"{pad}# ", subsequent_indent=f"{pad}#   ")


def _on(flag: bool | None, what: str) -> str:
    return f"{what} {'on' if flag else 'off'}" if flag is not None else f"{what} not shown"


def describe(d: Detected) -> str:
    """One line on what the endpoint's pages say about it."""
    fp = d.fingerprint
    version = f" {fp.version}" if fp.version else ""
    block = f"block size {fp.block_size}" if fp.block_size is not None else "block size not shown"
    if fp.block_size_ok is False and "minimax-m3" in d.model.lower():
        block += f" (MiniMax M3 needs {M3_BLOCK_SIZE})"
    lora = f"LoRA on ({', '.join(d.adapters) or 'no adapter loaded'})" if d.lora else _on(d.lora, "LoRA")
    prefix, spec = (
        _on(fp.enable_prefix_caching, "prefix caching"),
        _on(d.spec_decoding, "speculative decoding"),
    )
    return f"{fp.backend}{version} (metric names of {fp.generation}); {block}; {prefix}; {spec}; {lora}"


def _endpoint(pool: Pool, d: Detected, name: str, key_env: str | None) -> Iterator[str]:
    yield from comment(f"{d.url}: {describe(d)}", 2)
    yield from comment(note, 2) if (note := "; ".join(d.notes)) else ()
    yield f"  - name: {name}"
    yield f"    base_url: {json.dumps(d.url.rstrip('/'))}"
    yield f"    backend: {d.backend}"
    yield f"    model: {json.dumps(d.model)}  # the served model id in /v1/models"
    yield f"    classes: [{pool.cls}]"
    yield f"    scrape_interval: {SCRAPE_INTERVAL}  # a common Prometheus scrape interval"
    if key_env:
        yield f"    api_key_env: {key_env}  # the variable holding the server's --api-key"
    else:
        yield "    # api_key_env: M3_API_KEY  # if the server runs --api-key: the variable holding it"
    if d.max_model_len is not None:
        yield "    deployment:  # recorded with every deployment fingerprint"
        yield f"      max_model_len: {d.max_model_len}"


def _slo(s: SLOChoice) -> Iterator[str]:
    yield from comment(s.why, 6)
    threshold = f", threshold: {seconds(s.threshold)}" if s.threshold is not None else ""
    yield (f"      - {{name: {s.name}, sli: {s.sli}{threshold}, objective: {s.objective:g}, "
           f"source: {s.source}}}")  # fmt: skip


def _class(pool: Pool) -> Iterator[str]:
    d = pool.members[0]
    served = pool.endpoints[0] if len(pool.endpoints) == 1 else ", ".join(pool.endpoints)
    yield f"  - name: {pool.cls}"
    yield f"    description: {json.dumps(f'Every request to {d.model} on {served}.')}"
    if len(pool.members) > 1:
        yield from comment(f"{served} serve {d.model} at the same context length: one pool, one class", 4)
    yield from comment(pool.ceiling_why, 4)
    yield f"    max_context_tokens: {pool.ceiling}"
    for note in pool.probe_notes:
        yield from comment(note, 4)
    yield f"    probes: [{', '.join(pool.probes)}]"
    yield from comment(
        f"a probe round every {PROBE_INTERVAL} gives the burn-rate alerts enough events to fire on a "
        f"real outage; each probe may take {PROBE_TIMEOUT}", 4)  # fmt: skip
    yield f"    probe: {{interval: {PROBE_INTERVAL}, timeout: {PROBE_TIMEOUT}}}"
    yield "    slos:"
    for s in pool.slos:
        yield from _slo(s)


def render(pools: Sequence[Pool], key_env: str | None = None) -> str:
    urls = [d.url for p in pools for d in p.members]
    lines = [
        "# m3mon starter configuration, written by `m3mon init` from what these endpoints serve:",
        *(f"#   {u}" for u in urls),
        "# Endpoints with the same model and context length form one pool with one request class.",
        "# Every choice says why; change what your traffic says otherwise (docs/getting-started.md).",
        "version: m3mon/v1",
        "",
        "endpoints:",
    ]
    for pool in pools:
        for d, name in zip(pool.members, pool.endpoints, strict=True):
            lines += [*_endpoint(pool, d, name, key_env), ""]
    lines.append("request_classes:")
    for pool in pools:
        lines += [*_class(pool), ""]
    lines += [
        *comment(
            "SQLite in a file beside this one: nothing to install; use a postgresql+psycopg:// URL "
            "for fleet mode or several monitors",
            0,
        ),
        "storage:",
        "  url: sqlite:///m3mon.db",
        "  retention: 14d",
        "",
        *comment(
            "the monitor's /metrics (SLIs, burn rates, budgets) for Prometheus; `m3mon generate` "
            "writes the scrape job, rules, dashboards and runbooks for it",
            0,
        ),
        "exporter:",
        "  listen: 127.0.0.1:9464",
    ]
    return "\n".join(lines) + "\n"
