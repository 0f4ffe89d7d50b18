"""Independent readings of a served ``/metrics`` page for the init tests (prometheus_client's own
parser, not the collector's), and a tiny static HTTP server that serves held pages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.support.http import serving

#: The histogram family vLLM and SGLang serve for each latency SLI, newest name first (from the
#: reference tables of vLLM 0.6-0.33 and SGLang 0.3-0.5, not from the code under test).
FAMILIES = {
    "ttft": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
            "sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"),
    "tpot": ("vllm:request_time_per_output_token_seconds", "sglang:request_time_per_output_token_seconds"),
    "e2e": ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"),
    "queue_time": ("vllm:request_queue_time_seconds", "sglang:queue_time_seconds"),
}  # fmt: skip


def bucket_edges(text: str) -> dict[str, set[float]]:
    """Histogram family -> its finite ``le`` values, as prometheus_client reads the page."""
    out: dict[str, set[float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.endswith("_bucket") and s.labels.get("le") not in (None, "+Inf"):
                out.setdefault(s.name.removesuffix("_bucket"), set()).add(float(s.labels["le"]))
    return out


def served_family(text: str, sli: str) -> str:
    """The family a page serves for ``sli`` (the newest name present)."""
    edges = bucket_edges(text)
    return next(f for f in FAMILIES[sli] if f in edges)


def _handler(routes: dict[str, tuple[str, str]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = routes.get(self.path)
            body = found[1].encode() if found else b"not found"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", found[0] if found else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def static_server(metrics: str, models: Any = None, version: str | None = None) -> Iterator[str]:
    """Serve ``/metrics`` (and ``/v1/models``, ``/version`` when given) on a free loopback port."""
    routes = {"/metrics": ("text/plain; version=0.0.4; charset=utf-8", metrics)}
    if models is not None:
        routes["/v1/models"] = ("application/json", json.dumps(models))
    if version is not None:
        routes["/version"] = ("application/json", json.dumps({"version": version}))
    with serving(_handler(routes)) as url:
        yield url


def models_doc(model: str, max_model_len: int | None) -> dict[str, Any]:
    card: dict[str, Any] = {"id": model, "object": "model", "owned_by": "vllm", "root": model, "parent": None}
    if max_model_len is not None:
        card["max_model_len"] = max_model_len
    return {"object": "list", "data": [card]}
