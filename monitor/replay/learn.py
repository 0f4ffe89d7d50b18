"""Learn a class's traffic profile (and observed context use) from what the monitor stored.

Sources, best first (the profile's ``source`` says which were used):

* **Lengths**: for a class on a dedicated pool, the pool's ``vllm:request_prompt_tokens`` and
  ``vllm:request_generation_tokens`` histograms summed over the scrape intervals of the window
  (quantile knots at the bucket edges); otherwise the token counts of the class's stored probe
  runs (the long-prompt probe left out: it is sized to the ceiling on purpose, and a profile
  replays the class's typical requests). The contract's context use counts every probe run,
  long-prompt included (:attr:`Observed.every`): the ceiling must hold the longest requests.
* **Arrival rate**: the mean request rate of the class's pool over the window (divided by the
  number of classes sharing the pool). **Burstiness**: the index of dispersion of request counts
  between consecutive intervals, ``D = mean((n_i − n_{i−1})²) / (2·mean(n))`` — 1 for Poisson,
  free of slow (diurnal) trends; ``D > 2`` gives ``bursty`` with gamma shape ``1 / D``.
* **Reasoning, tool-call and image shares**: the shares of the class's probe kinds
  (``reasoning``; ``tool_call`` and ``agent_session``; ``image``).
* **Prefix reuse**: the pool's mean prefix-cache hit rate.

This module reads the store (like the report); nothing here is upstream of it.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.model import Model
from monitor.replay.profile import Arrival, Lengths, TrafficProfile
from monitor.store.tables import ProbeResultRow, ScrapeIntervalRow

TOOL_KINDS = ("tool_call", "agent_session")
LEFT_OUT_KINDS = ("long_prompt",)


@dataclass
class Observed:
    """What the store holds about one class's traffic over a window."""

    prompt: list[int] = field(default_factory=list)  # per probe run (the long-prompt probe left out)
    output: list[int] = field(default_factory=list)
    every: list[int] = field(default_factory=list)  # prompt + output of every probe run, every kind
    histograms: dict[str, dict[str, Any]] = field(default_factory=dict)  # summed server histograms
    counts: list[float] = field(default_factory=list)  # requests per scrape interval
    seconds: float = 0.0
    hit_rates: list[float] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    sharing: int = 1  # classes sharing the pool
    cap: int | None = None  # the pool's configured max-model-len (tops the +Inf bucket)

    @property
    def totals(self) -> list[int]:
        """Prompt + output per probe run (runs with both counts)."""
        return [p + o for p, o in zip(self.prompt, self.output, strict=True)]


def _add_hist(into: dict[str, dict[str, Any]], name: str, h: dict[str, Any]) -> None:
    have = into.get(name)
    if have is None or have["edges"] != h["edges"]:
        into[name] = {"edges": list(h["edges"]), "counts": list(h["counts"])}
        return
    have["counts"] = [a + b for a, b in zip(have["counts"], h["counts"], strict=True)]


def observe(
    session: Session, model: Model, request_class: str, start: float, end: float, endpoint: str | None = None
) -> Observed:
    """Collect :class:`Observed` for ``request_class`` over ``(start, end]``; with ``endpoint``,
    only that pool's traffic (its probe runs and its scrape intervals), else every pool's of the class."""
    rc = model.request_class(request_class)
    pools = [e for e in model.endpoints_for(rc.name) if endpoint is None or e.name == endpoint]
    endpoints = [e.name for e in pools]
    caps = [e.deployment.max_model_len for e in pools if e.deployment.max_model_len]
    obs = Observed(sharing=max((len(e.classes) for e in pools), default=1), cap=min(caps) if caps else None)
    q = select(ProbeResultRow.kind, ProbeResultRow.prompt_tokens, ProbeResultRow.completion_tokens).where(
        ProbeResultRow.request_class == rc.name,
        ProbeResultRow.started_at > start,
        ProbeResultRow.started_at <= end,
    )
    if endpoint is not None:
        q = q.where(ProbeResultRow.endpoint == endpoint)
    for kind, prompt, output in session.execute(q):
        obs.kinds[kind] += 1
        if prompt is not None and output is not None:
            obs.every.append(int(prompt) + max(1, int(output)))
        if kind not in LEFT_OUT_KINDS and prompt is not None and output is not None:
            obs.prompt.append(int(prompt))
            obs.output.append(max(1, int(output)))
    iq = select(ScrapeIntervalRow).where(
        ScrapeIntervalRow.endpoint.in_(endpoints), ScrapeIntervalRow.end > start, ScrapeIntervalRow.end <= end
    )
    for row in session.scalars(iq.order_by(ScrapeIntervalRow.end)):
        obs.counts.append(row.requests)
        obs.seconds += (row.end - row.start) if row.start is not None else 0.0
        if row.prefix_cache_hit_rate is not None:
            obs.hit_rates.append(row.prefix_cache_hit_rate)
        hists = row.histograms if isinstance(row.histograms, dict) else json.loads(row.histograms)
        for name in ("prompt_tokens", "generation_tokens"):
            if name in hists and rc.dedicated_pool:
                _add_hist(obs.histograms, name, hists[name])
    return obs


def histogram_lengths(h: dict[str, Any], cap: int | None = None) -> Lengths | None:
    """Quantile knots of a cumulative token histogram: each bucket with observations gives
    ``(F(lower), lower)`` and ``(F(upper), upper)``, so sampling is uniform within a bucket; mass
    above the last finite edge is spread up to ``cap`` (the pool's max-model-len) when given, else
    put at that edge. None without observations."""
    edges, counts = h["edges"], h["counts"]
    total = counts[-1] if counts else 0
    if total <= 0:
        return None
    knots: list[tuple[float, int]] = []
    lower, below = 1, 0.0
    for edge, count in zip(edges, counts, strict=True):
        upper = (cap or lower) if edge == "+Inf" else max(1, int(float(edge)))
        if count > below:
            knots += [(below / total, lower), (min(1.0, count / total), max(upper, lower))]
        lower, below = upper, count
    return Lengths(quantiles=knots)


def dispersion(counts: list[float]) -> float | None:
    """Index of dispersion of consecutive interval counts (1 for Poisson); None with < 3 intervals."""
    if len(counts) < 3 or sum(counts) <= 0:
        return None
    diffs = [(b - a) ** 2 for a, b in itertools.pairwise(counts)]
    return (sum(diffs) / len(diffs)) / (2 * sum(counts) / len(counts))


def learn(obs: Observed, request_class: str, window: str) -> TrafficProfile:
    """The profile :class:`Observed` supports (raises ValueError when it holds no lengths)."""
    sources = []
    prompt = (
        histogram_lengths(obs.histograms["prompt_tokens"], obs.cap)
        if "prompt_tokens" in obs.histograms
        else None
    )
    output = (
        histogram_lengths(obs.histograms["generation_tokens"], obs.cap)
        if "generation_tokens" in obs.histograms
        else None
    )
    if prompt is not None and output is not None:
        sources.append("server token histograms")
    elif obs.prompt:
        prompt, output = Lengths.of(obs.prompt), Lengths.of(obs.output)
        sources.append(f"{len(obs.prompt)} probe runs' token counts")
    else:
        raise ValueError(f"no stored token counts for class {request_class!r} in the last {window}")
    rate = sum(obs.counts) / obs.seconds / obs.sharing if obs.seconds > 0 and sum(obs.counts) > 0 else 1.0
    d = dispersion(obs.counts)
    arrival = Arrival(rate=round(max(rate, 0.001), 4))
    if d is not None and d > 2.0:
        arrival = Arrival(process="bursty", rate=arrival.rate, burstiness=round(1.0 / d, 4))
    sources.append(
        f"arrivals from {len(obs.counts)} scrape intervals" if obs.counts else "no arrivals (rate 1/s)"
    )
    n = sum(c for k, c in obs.kinds.items() if k not in LEFT_OUT_KINDS) or 1
    return TrafficProfile.model_validate(
        {
            "class": request_class,
            "source": f"learned over {window}: " + "; ".join(sources) + "; kinds from probes",
            "prompt_tokens": prompt.model_dump(),
            "output_tokens": output.model_dump(),
            "arrival": arrival.model_dump(),
            "reasoning_share": round(obs.kinds["reasoning"] / n, 4),
            "tool_call_share": round(sum(obs.kinds[k] for k in TOOL_KINDS) / n, 4),
            "image_share": round(obs.kinds["image"] / n, 4),
            "prefix_reuse": round(min(0.95, sum(obs.hit_rates) / len(obs.hit_rates)), 4)
            if obs.hit_rates
            else 0.0,
        }
    )
