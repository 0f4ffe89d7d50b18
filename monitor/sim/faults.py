"""Fault switches of the simulator: what can go wrong, each under one JSON key.

Faults are set at start (``m3mon sim --faults JSON``) and at runtime (``GET``/``POST``/``DELETE
/sim/faults``; ``POST`` merges the given keys over the current set). Unknown keys and bad
values are rejected with a clear message and change nothing. ``docs/simulator.md`` lists the
observable symptom of each key.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from monitor.errors import M3MonError


class FaultError(M3MonError):
    """A faults document is not valid JSON or does not match :class:`Faults`."""


class Faults(BaseModel):
    """The set of active faults; the default instance means a healthy server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    error_rate: float = Field(0.0, ge=0.0, le=1.0, description="share of requests answered with error_status")
    error_status: int = Field(500, ge=400, le=599, description="HTTP status of injected errors")
    error_next: int | None = Field(
        None, ge=1, description="the next N requests get error_status (counts down as they are answered)"
    )
    retry_after_ms: int | None = Field(
        None, ge=0, le=600_000, description="injected errors carry retry-after-ms (and retry-after) headers"
    )
    preprocess_delay: float | None = Field(
        None, gt=0.0, le=600.0, description="extra seconds of API-server preprocessing per request"
    )
    latency_multiplier: float = Field(1.0, gt=0.0, le=1000.0, description="scales every engine step")
    brownout_queue_stall: bool = Field(False, description="the scheduler admits nothing from the queue")
    engine_freeze: bool = Field(
        False,
        description="the engine stops stepping with /health 200: running requests get no token, the queue "
        "grows, the token counters stop",
    )
    brownout_prefill_factor: float = Field(1.0, ge=1.0, le=1000.0, description="prefill is this much slower")
    midstream_disconnect: int | None = Field(None, ge=0, description="drop the stream after N chunks")
    empty_output: bool = Field(False, description="answer with empty content")
    truncated_output: int | None = Field(None, ge=1, description="stop at N tokens, finish_reason length")
    degenerate_output: bool = Field(False, description="answer with a repeated phrase")
    malformed_tool_call: Literal["invalid_json", "schema_mismatch"] | None = Field(
        None, description="tool-call arguments are not JSON, or JSON that breaks the schema"
    )
    parser_leak: bool = Field(False, description="raw MiniMax markers appear in content")
    wrong_model: str | None = Field(None, min_length=1, description="report this model id instead")
    health_ok_completions_fail: bool = Field(False, description="/health 200 but completions 500")
    dead: bool = Field(False, description="engine dead: /health 503, completions 500")
    kv_pressure: int | None = Field(None, ge=1, description="shrink the KV pool to N blocks")
    stream_stall: float | None = Field(
        None, gt=0.0, le=600.0, description="pause each stream this many seconds after its 4th chunk"
    )
    prefix_cache_off: bool = Field(False, description="prefix caching finds nothing (every prompt cold)")
    gpu_saturated: bool = Field(False, description="GPUs pinned at full activity; engine steps 2x slower")
    gpu_xid: int | None = Field(None, ge=1, le=255, description="GPU 0 reports this XID error (DCGM)")
    gpu_memory_full: bool = Field(False, description="every GPU's framebuffer is full (DCGM FB_FREE 0)")
    gpu_driver: str | None = Field(
        None,
        pattern=r"^[0-9A-Za-z][0-9A-Za-z.\-]{0,49}$",
        description="the DCGM page reports this driver version (a driver upgrade)",
    )

    def merged(self, update: dict[str, Any]) -> Faults:
        """A copy with ``update`` applied; validated as a whole (raises :class:`FaultError`)."""
        return parse_faults({**self.model_dump(), **update})

    def active(self) -> dict[str, Any]:
        """Only the keys that differ from a healthy server."""
        return self.model_dump(exclude_defaults=True)


#: Keys that are actions rather than state: performed once when posted, never stored.
ACTION_KEYS = frozenset({"restart"})


def parse_faults(doc: str | dict[str, Any] | None) -> Faults:
    """Faults from a JSON text or a decoded object; ``None``/empty means no faults."""
    if doc is None or doc == "":
        return Faults()
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except json.JSONDecodeError as exc:
            raise FaultError(f"faults: not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise FaultError("faults: expected a JSON object of fault keys")
    stray = sorted(set(doc) & ACTION_KEYS)
    if stray:
        raise FaultError(f"faults: {', '.join(stray)} is an action, not a fault state")
    try:
        return Faults.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
        raise FaultError(f"faults: {problems}") from exc
