"""Synthetic streaming probes: one module per kind, all with the same signature.

``async def probe(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult``;
:data:`PROBERS` maps each kind in :data:`monitor.conventions.PROBE_KINDS` to its function.
:mod:`monitor.probes.runner` runs rounds of them; :mod:`monitor.probes.metrics` exports results.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx

from monitor.probes import agent_session, chat, image, long_prompt, reasoning, tool_call
from monitor.probes.result import ProbeResult
from monitor.probes.target import ProbeSpec, Target

Prober = Callable[[Target, ProbeSpec, httpx.AsyncClient], Awaitable[ProbeResult]]

PROBERS: dict[str, Prober] = {
    "chat": chat.probe,
    "tool_call": tool_call.probe,
    "image": image.probe,
    "long_prompt": long_prompt.probe,
    "reasoning": reasoning.probe,
    "agent_session": agent_session.probe,
}

__all__ = ["PROBERS", "ProbeResult", "ProbeSpec", "Prober", "Target"]
