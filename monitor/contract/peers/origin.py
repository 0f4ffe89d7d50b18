"""Did a peer run measure this endpoint? Its model and target against the endpoint's identity.

A file names the model it asked for (``vllm bench serve``'s ``model_id``, GuideLLM's
``backend.model``, AIPerf's ``models``) and some name the server they sent requests to (GuideLLM's
``backend.target``, AIPerf's ``endpoint.urls``; ``vllm bench serve`` does not save its URL). Each
one the file names must be the endpoint's:

* **model**: the model id the endpoint serves (observed from ``/v1/models`` at import), its
  configured ``model``, or its deployment's ``checkpoint`` (``vllm bench serve --model`` is the
  checkpoint when ``--served-model-name`` differs);
* **target**: the same host and port as the endpoint's ``base_url`` (scheme defaults: 80, 443;
  ``localhost`` is ``127.0.0.1``; the path is not compared).

A run that names another is refused, nothing stored, unless the operator accepts it explicitly
(``--accept-foreign-model``: e.g. a file written with a local path as ``--model``;
``--accept-foreign-target``: a benchmark sent through a port-forward or a gateway). An accepted
mismatch is recorded with the run (``summary.source.origin``) and shown with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from monitor.contract.peers.model import PeerRun
from monitor.model import Endpoint

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK = {"localhost": "127.0.0.1", "::1": "127.0.0.1"}


@dataclass(frozen=True)
class Identity:
    """What the endpoint is: its name, the model ids it answers to, its address."""

    endpoint: str
    models: tuple[str, ...]
    base_url: str

    @classmethod
    def of(cls, endpoint: Endpoint, served: str | None) -> Identity:
        names = (served, endpoint.model, endpoint.deployment.checkpoint)
        return cls(endpoint.name, tuple(dict.fromkeys(n for n in names if n)), endpoint.base_url)


@dataclass(frozen=True)
class Mismatch:
    """One fact of the run that is not the endpoint's."""

    kind: str  # "model" or "target"
    text: str  # "model 'meta-llama/Llama-3.1-8B', not sim's ('MiniMaxAI/MiniMax-M3')"


def address(url: str) -> tuple[str, int | None]:
    """``(host, port)`` of a URL (``host:port`` without a scheme is read as http)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = (parts.hostname or "").lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        port = None
    return _LOOPBACK.get(host, host), port


def mismatches(run: PeerRun, who: Identity) -> list[Mismatch]:
    """The facts ``run`` names that are not ``who``'s (none when it names none)."""
    out = []
    if run.model is not None and run.model not in who.models:
        known = ", ".join(repr(m) for m in who.models)
        out.append(Mismatch("model", f"model {run.model!r}, not {who.endpoint}'s ({known})"))
    if run.target is not None and address(run.target) != address(who.base_url):
        out.append(Mismatch("target", f"target {run.target}, not {who.endpoint} ({who.base_url})"))
    return out


def record(run: PeerRun, who: Identity, accepted: list[Mismatch]) -> dict[str, Any]:
    """What is stored with the run: the facts the file names, the endpoint's, what was accepted."""
    return {
        "model": run.model, "target": run.target, "endpoint_models": list(who.models),
        "endpoint_url": who.base_url, "accepted_foreign": [m.text for m in accepted],
    }  # fmt: skip
