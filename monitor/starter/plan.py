"""From detected endpoints to a starter plan: pools, one request class each, probes and SLOs.

Endpoints serving the same model with the same context length on the same backend are one pool
and share one request class, whose context ceiling is that length. Each choice carries the reason
the YAML states beside it (:mod:`monitor.starter.render`). Latency thresholds are served bucket
edges: the smallest edge every endpoint of the pool serves at or above an SRE's usual starting
point for the pool's context size, so the collector counts good events exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from monitor.durations import parse_duration
from monitor.starter.detect import Detected

#: P95 time to first token an SRE would start from, by context ceiling (tokens, seconds): a pool
#: with a longer ceiling takes longer prompts, whose prefill is slower.
TTFT_START = ((8192, 1.0), (32768, 2.5), (131072, 5.0))
TTFT_START_LONGER = 20.0
#: P95 inter-token latency to start from: 100 ms is 10 tokens/s, about reading speed.
ITL_START = 0.1
LATENCY_OBJECTIVE = 95.0
AVAILABILITY_OBJECTIVE = 99.5
CORRECTNESS_OBJECTIVE = 99.0
PROBE_INTERVAL = "30s"
PROBE_TIMEOUT = "60s"
MIN_CONTEXT = 1024  # the schema's smallest class ceiling
_UNKNOWN_CONTEXT = 32768


@dataclass(frozen=True)
class SLOChoice:
    name: str
    sli: str
    objective: float
    source: str
    why: str
    threshold: float | None = None


@dataclass(frozen=True)
class Pool:
    """Endpoints that serve one model at one context length, and the class they serve."""

    cls: str
    ceiling: int
    ceiling_why: str
    members: tuple[Detected, ...]
    endpoints: tuple[str, ...]
    probes: tuple[str, ...]
    probe_notes: tuple[str, ...]
    slos: tuple[SLOChoice, ...]


def slug(model: str) -> str:
    """A name-safe short form of a model id: ``MiniMaxAI/MiniMax-M3`` -> ``minimax-m3``."""
    tail = model.rstrip("/").rsplit("/", 1)[-1].lower()
    out = re.sub(r"[^a-z0-9_.-]+", "-", tail).strip("-_.")[:40]
    return out or "model"


def context_tag(tokens: int) -> str:
    """``131072`` -> ``128k``, ``2048`` -> ``2k``, ``100000`` -> ``100k``."""
    if tokens >= 1024 and tokens % 1024 == 0:
        return f"{tokens // 1024}k"
    return f"{tokens // 1000}k" if tokens >= 1000 else str(tokens)


def _unique(name: str, taken: set[str]) -> str:
    out, n = name, 2
    while out in taken:
        out, n = f"{name}-{n}", n + 1
    taken.add(out)
    return out


def shared_edges(members: Sequence[Detected], sli: str) -> tuple[float, ...] | None:
    """The edges every member serves for ``sli``; None when some member serves no such histogram."""
    sets = [set(m.edges[sli]) for m in members if sli in m.edges]
    if len(sets) != len(members) or not sets:
        return None
    return tuple(sorted(set.intersection(*sets)))


def ttft_start(ceiling: int) -> float:
    return next((s for limit, s in TTFT_START if ceiling <= limit), TTFT_START_LONGER)


def seconds(value: float) -> str:
    """A duration as the configuration writes it, read back as exactly ``value``: ``0.1`` ->
    ``100ms``, ``2.5`` -> ``2.5s``; an edge no short form gives back (a custom bucket) in full."""
    short = f"{value * 1000:g}ms" if value < 1 else f"{value:g}s"
    return short if parse_duration(short) == value else f"{value!r}s"


def _to_probes(choice: SLOChoice, reason: str | None) -> SLOChoice:
    """``choice`` measured by the probes instead, when the server's page cannot feed its rules."""
    if reason is None or choice.source == "probes":
        return choice
    why = f"{choice.why}; but {reason}, so the probes measure it"
    return SLOChoice(choice.name, choice.sli, choice.objective, "probes", why, choice.threshold)


def _latency(members: Sequence[Detected], sli: str, start: float, what: str, usual: str) -> SLOChoice:
    """A P95 latency SLO at the smallest shared served edge at or above ``start``; from the probes
    when no histogram of ``sli`` is served by every member."""
    edges = shared_edges(members, sli)
    name = f"{sli}-p95"
    family = members[0].histograms.get(sli, "")
    if not edges:
        why = (f"{what}: the page serves no {sli} histogram every endpoint of this pool shares, so the "
               f"probes measure it; {seconds(start)} is {usual}")  # fmt: skip
        return SLOChoice(name, sli, LATENCY_OBJECTIVE, "probes", why, start)
    above = [e for e in edges if e >= start - 1e-12]
    if above and abs(above[0] - start) < 1e-12:
        threshold = above[0]
        why = f"{what}: {seconds(start)} is {usual}, and a bucket edge of {family}"
    elif above:
        threshold = above[0]
        why = (f"{what}: {seconds(start)} is {usual}; "
               f"{seconds(threshold)} is the nearest bucket edge of {family} above it")  # fmt: skip
    else:
        threshold = edges[-1]
        why = (f"{what}: {seconds(start)} is {usual}, but {family}'s largest finite bucket "
               f"edge is {seconds(threshold)}; that is used")  # fmt: skip
    return SLOChoice(name, sli, LATENCY_OBJECTIVE, "server", why, threshold)


def _spec_note(members: Sequence[Detected]) -> str:
    if any(m.spec_decoding for m in members):
        return " (speculative decoding is on: a step may stream several tokens, so steps run longer)"
    return ""


def slos(members: Sequence[Detected], ceiling: int, blind: Mapping[str, str]) -> tuple[SLOChoice, ...]:
    """The class's SLOs; those named in ``blind`` (SLO name -> why) are measured by the probes."""
    per_token = "itl" if shared_edges(members, "itl") or not shared_edges(members, "tpot") else "tpot"
    chosen = (
        SLOChoice("availability", "availability", AVAILABILITY_OBJECTIVE, "probes",
                  "a probe that gets no answer is a bad event; 99.5% leaves room for a failed probe in "
                  "200 while the probe volume is small (raise to 99.9 with more probes)"),
        SLOChoice("correctness", "correctness", CORRECTNESS_OBJECTIVE, "probes",
                  "answers the probes judge wrong (empty, garbled, a broken tool call) are bad events"),
        _latency(members, "ttft", ttft_start(ceiling), "time to first token, P95",
                 f"a usual start for a {context_tag(ceiling)} ceiling (longer prompts prefill longer)"),
        _latency(members, per_token, ITL_START, "time between streamed tokens, P95",
                 "a usual start (10 tokens/s, about reading speed)" + _spec_note(members)),
    )  # fmt: skip
    return tuple(_to_probes(c, blind.get(c.name)) for c in chosen)


def probes(members: Sequence[Detected]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The probe kinds every endpoint of the pool can answer, and a note on each kind decided."""
    kinds = ["chat"]
    notes = ["chat: every endpoint answers a short chat completion"]
    tools = {m.tool_parser for m in members}
    if tools == {True}:
        kinds.append("tool_call")
        notes.append("tool_call: the page serves vllm:tool_call_parser_invocations_total, which vLLM "
                     "registers only with --tool-call-parser")  # fmt: skip
    elif tools == {False}:
        notes.append("no tool_call: no vllm:tool_call_parser_invocations_total on the page, so "
                     "--tool-call-parser is off (vLLM 0.32+ registers it with any parser)")  # fmt: skip
    else:
        notes.append("no tool_call: the page cannot show whether --tool-call-parser is on (vLLM before "
                     "0.32, SGLang); add tool_call if it is")  # fmt: skip
    if any(m.images_served for m in members):
        kinds.append("image")
        notes.append("image: vllm:mm_cache_queries_total > 0, so this model has served images")
    else:
        notes.append("no image: no images served yet (vllm:mm_cache_queries_total is 0 or absent); "
                     "add image if the model takes images")  # fmt: skip
    recipe = " (the MiniMax-M3 recipe sets --reasoning-parser minimax_m3)" if _is_m3(members) else ""
    notes.append("no reasoning: neither /metrics nor /v1/models shows --reasoning-parser; add "
                 f"reasoning if it is on{recipe}")  # fmt: skip
    notes.append("no long_prompt: a prompt near the ceiling costs a full prefill every round; add it "
                 "with probe.long_prompt_tokens to watch the ceiling itself")  # fmt: skip
    return tuple(kinds), tuple(notes)


def _is_m3(members: Sequence[Detected]) -> bool:
    return any("minimax-m3" in m.model.lower() for m in members)


def _ceiling(members: Sequence[Detected]) -> tuple[int, str]:
    length = members[0].max_model_len
    if length is None:
        why = (f"the context length could not be read (no max_model_len in /v1/models, no context "
               f"gauge on the page); {_UNKNOWN_CONTEXT} is a guess: set it")  # fmt: skip
        return _UNKNOWN_CONTEXT, why
    if length < MIN_CONTEXT:
        return MIN_CONTEXT, f"max_model_len {length} is below the smallest class ceiling ({MIN_CONTEXT})"
    return length, f"max_model_len {length} from /v1/models: no request to this pool can be longer"


def plan(detected: Sequence[Detected], blind: Mapping[str, Mapping[str, str]] | None = None) -> list[Pool]:
    """One pool per (backend, model, context length), in the order the URLs were given. ``blind``:
    class -> SLO name -> why the server's page cannot feed that SLO's generated rules."""
    groups: dict[tuple[str, str, int | None], list[Detected]] = {}
    for d in detected:
        groups.setdefault((d.backend, d.model, d.max_model_len), []).append(d)
    classes: set[str] = set()
    endpoints: set[str] = set()
    pools = []
    for (_, model, _), members in groups.items():
        ceiling, why = _ceiling(members)
        base = f"{slug(model)}-{context_tag(ceiling)}"
        cls = _unique(base, classes)
        names = [cls] if len(members) == 1 else [f"{cls}-{i}" for i in range(1, len(members) + 1)]
        kinds, notes = probes(members)
        pools.append(
            Pool(cls, ceiling, why, tuple(members), tuple(_unique(n, endpoints) for n in names), kinds,
                 notes, slos(members, ceiling, (blind or {}).get(cls, {})))
        )  # fmt: skip
    return pools
