"""What a probe runs against (:class:`Target`) and how it runs there (:class:`ProbeSpec`).

A target is one endpoint seen through one request class: the class decides the context ceiling
and the probe plan, the endpoint decides the URL, the expected model id and the credentials.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.model import Endpoint, ProbePlan, RequestClass

#: Rough characters per token used to size synthetic prompts (English prose, BPE tokenizers).
CHARS_PER_TOKEN = 4.0


@dataclass(frozen=True)
class Target:
    """One endpoint in the context of one request class."""

    endpoint: Endpoint
    request_class: RequestClass

    @property
    def chat_url(self) -> str:
        return self.endpoint.base_url.rstrip("/") + "/v1/chat/completions"

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def max_context_tokens(self) -> int:
        return self.request_class.max_context_tokens


@dataclass(frozen=True)
class ProbeSpec:
    """The per-class probe plan for one probe kind, plus the knobs every kind shares."""

    kind: str
    plan: ProbePlan
    max_tokens: int = 16  # answer budget of the short probes
    include_usage: bool = True
    continuous_usage: bool = True  # running usage per chunk: exact tokens per chunk for ITL
    reasoning_max_tokens: int = 1024  # room to think before answering

    @classmethod
    def for_class(cls, request_class: RequestClass, kind: str) -> ProbeSpec:
        return cls(kind=kind, plan=request_class.probe)
