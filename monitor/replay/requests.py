"""The requests of a replay: drawn from a profile, sent with the probes' streaming client.

Each planned request has a prompt length, an output length and a kind (``text``, ``reasoning``,
``tool`` — a real tool loop of ``tool_rounds`` tool calls and a final answer — or ``image``). A
share ``prefix_reuse`` of every prompt is a prefix shared by all requests of the run, so the
server's prefix cache sees the profile's reuse. Output lengths are forced the way
``vllm bench serve`` forces them: ``max_tokens`` = the drawn length and ``ignore_eos``.

Prompt text is filler sized by the endpoint's calibration (whole sentences, one held in reserve:
sentences vary around the calibrated mean — real vLLM: 102 of 400 prompts meant as 300 tokens
went over, by up to 8 %, without it), then measured with the server's tokenizer and corrected to
the planned length where the endpoint can measure it (:meth:`Sender.prepare`,
:mod:`monitor.replay.sizing`).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx

from monitor.probes.agent_session import CITIES, _assistant_turn, next_step, session_timings, tool_result
from monitor.probes.exchange import Exchange, chat_body, stream_chat
from monitor.probes.image import PALETTE, image_message, square_png
from monitor.probes.judge import Verdict, judge_answer
from monitor.probes.result import Timings
from monitor.probes.target import Target
from monitor.probes.tokens import ESTIMATE, Calibration
from monitor.probes.tool_call import TOOLS, judge_tool_turn
from monitor.replay.profile import TrafficProfile
from monitor.replay.sizing import MEASURED, TOLERANCE, UNMEASURED, Messages, Words, fit, per_word, words_for

KINDS = ("text", "reasoning", "tool", "image")
TOOL_INSTRUCTION = " Use the get_weather tool for Paris in celsius."
TAG_ALLOWANCE: Final = 16
"""Server tokens set aside for one short fixed text in a prompt (``Request <8 hex>.``, ``Context
<12 hex>.``, the tool instruction) on any tokenizer."""


@dataclass(frozen=True)
class Planned:
    """One request of a replay, before it is sent."""

    index: int
    offset: float  # seconds after the run's start (rate mode); 0 in concurrency mode
    kind: str
    prompt_tokens: int
    output_tokens: int


def plan_request(profile: TrafficProfile, rng: random.Random, index: int, offset: float) -> Planned:
    """Draw one request's kind and lengths from ``profile``."""
    u = rng.random()
    kind = (
        "tool"
        if u < profile.tool_call_share
        else ("image" if u < profile.tool_call_share + profile.image_share else "text")
    )
    if kind == "text" and rng.random() < profile.reasoning_share:
        kind = "reasoning"
    return Planned(index, offset, kind, profile.prompt_tokens.sample(rng), profile.output_tokens.sample(rng))


@dataclass(frozen=True)
class Outcome:
    """What one replayed request did: verdict category, timings and token counts."""

    planned: Planned
    reason: str | None
    detail: str
    timings: Timings
    prompt_tokens: int | None
    output_tokens: int | None
    sent_at: float  # monotonic, before the request was handed to the client
    body_sent_at: float | None = None  # monotonic, first request's body written (TTFT counts from here)

    @property
    def first_token_at(self) -> float | None:
        """Monotonic time the first token arrived (for timing checks against a server's truth)."""
        ttft = self.timings.ttft
        return None if ttft is None or self.body_sent_at is None else self.body_sent_at + ttft

    @property
    def ok(self) -> bool:
        return self.reason is None


def replay_verdict(ex: Exchange, model: str) -> Verdict:
    """The probe judge's checks and categories, except that forced-length outputs (``ignore_eos``)
    may end with ``length``, may be all reasoning, and may repeat themselves (the server's padding
    is not a loop); usage must still be there."""
    verdict = judge_answer(ex, model, allow_length=True)
    t = ex.transcript
    if verdict.reason == "truncated" and t.reasoning.strip() and t.finish_reason == "length":
        verdict = Verdict("degenerate_output")  # the forced length went to reasoning: no answer needed
    if verdict.reason != "degenerate_output":
        return verdict
    missing = [k for k in ("prompt_tokens", "completion_tokens") if ex.transcript.usage_int(k) is None]
    return Verdict("missing_usage", f"usage lacks {', '.join(missing)}") if missing else Verdict()


class Sender:
    """Sends planned requests to one target with a shared prefix for the whole run."""

    def __init__(
        self,
        target: Target,
        profile: TrafficProfile,
        timeout: float,
        seed: int = 0,
        calibration: Calibration = ESTIMATE,
    ) -> None:
        self.target, self.profile, self.timeout, self.calibration = target, profile, timeout, calibration
        self.rng = random.Random(seed)
        self.prefix_salt = uuid.uuid4().hex[:12]
        self._prefixes: dict[int, tuple[str, int]] = {}  # shared tokens -> (text, its tokens)
        self.unmeasured = False  # the endpoint could not measure a prompt: sizes are estimates
        self.unfit = 0  # prompts measured but not within sizing.TOLERANCE of their planned size

    def _prefix(self, shared: int) -> tuple[str, int]:
        """The run's shared prefix of about ``shared`` tokens and its estimated size: the
        ``Context <salt>.`` tag and filler words within the budget; none when the tag alone is
        longer (a prefix longer than its share would make a short prompt unreachable: the demo's
        26-token prompts at 45 % reuse were 11 % long)."""
        if shared <= TAG_ALLOWANCE:
            return "", 0
        if shared not in self._prefixes:
            n = round((shared - TAG_ALLOWANCE) / per_word(self.calibration))
            words = Words(random.Random(shared), []).first(n) if n else ""
            text = " ".join(x for x in (f"Context {self.prefix_salt}.", words) if x)
            self._prefixes[shared] = (text, TAG_ALLOWANCE + round(n * per_word(self.calibration)))
        return self._prefixes[shared]

    def _build(self, p: Planned) -> tuple[Callable[[int], Messages], int]:
        """The request's messages as a function of its filler word count, and the count the
        calibration gives (whole sentences, within the budget)."""
        cal = self.calibration
        head, head_tokens = self._prefix(int(p.prompt_tokens * self.profile.prefix_reuse))
        fixed = head_tokens + TAG_ALLOWANCE * (2 if p.kind == "tool" else 1)
        tag = f"Request {uuid.uuid4().hex[:8]}."
        words = Words(random.Random(self.rng.random()), [])
        colour = self.rng.choice(sorted(PALETTE)) if p.kind == "image" else None

        def build(n: int) -> Messages:
            text = " ".join(x for x in (head, tag, words.first(n)) if x)
            if p.kind == "tool":
                text += TOOL_INSTRUCTION
            if colour is not None:
                return [image_message(square_png(PALETTE[colour]), text)]
            return [{"role": "user", "content": text}]

        return build, words_for(max(1, cal.sentences(max(1, p.prompt_tokens), fixed) - 1))

    @property
    def sizing(self) -> str:
        """How this run's prompts were sized (``ReplaySummary.prompt_sizing``)."""
        text = UNMEASURED if self.unmeasured or self.calibration.source != "tokenize" else MEASURED
        if self.unfit:
            text += f"; {self.unfit} prompt(s) could not be sized within {TOLERANCE:.0%} of their plan"
        return text

    async def prepare(self, client: httpx.AsyncClient, p: Planned) -> Messages:
        """The request's messages, sized with the server's tokenizer where it can measure them
        (:mod:`monitor.replay.sizing`), else by the calibration."""
        build, start = self._build(p)
        if self.calibration.source != "tokenize" or p.kind == "image" or self.unmeasured:
            return build(start)
        tools = TOOLS if p.kind == "tool" else None
        messages, count = await fit(
            client, self.target.endpoint, build, tools, start, p.prompt_tokens, per_word(self.calibration)
        )
        self.unmeasured = count is None
        if count is not None and abs(count - p.prompt_tokens) > max(1.0, TOLERANCE * p.prompt_tokens):
            self.unfit += 1  # the template, tools and tags alone are longer (or words too coarse)
        return messages

    def _body(self, messages: list[dict[str, Any]], p: Planned, **extra: Any) -> dict[str, Any]:
        thinking = "enabled" if p.kind == "reasoning" else "disabled"
        params: dict[str, Any] = {
            "temperature": 1.0,
            "top_p": 0.95,
            "chat_template_kwargs": {"thinking_mode": thinking},
        }
        params.update(extra)
        return chat_body(self.target, messages, **params)

    async def send(self, client: httpx.AsyncClient, p: Planned, messages: Messages | None = None) -> Outcome:
        """Send ``p`` (its prepared ``messages``, else prepared now) and judge the answer."""
        messages = messages if messages is not None else await self.prepare(client, p)
        sent = time.monotonic()
        if p.kind == "tool":
            return await self._tool_loop(client, p, messages, sent)
        body = self._body(messages, p, max_tokens=p.output_tokens, ignore_eos=True)
        ex = await stream_chat(client, self.target, body, self.timeout)
        verdict = replay_verdict(ex, self.target.model)
        return _outcome(p, verdict, ex.timings(), [ex], sent)

    async def _tool_loop(
        self, client: httpx.AsyncClient, p: Planned, messages: list[dict[str, Any]], sent: float
    ) -> Outcome:
        """Tool rounds (one call each, the tool answering at once, the next step asked for as the
        agent-session probe does), then a forced-length answer with the tool withheld."""
        turns: list[Exchange] = []
        verdict = Verdict()
        for round_no in range(self.profile.tool_rounds + 1):
            final = round_no == self.profile.tool_rounds
            extra: dict[str, Any] = {"tools": TOOLS, "tool_choice": "none" if final else "auto"}
            extra.update(
                {"max_tokens": p.output_tokens, "ignore_eos": True} if final else {"max_tokens": 256}
            )
            ex = await stream_chat(client, self.target, self._body(messages, p, **extra), self.timeout)
            turns.append(ex)
            verdict = (
                replay_verdict(ex, self.target.model) if final else judge_tool_turn(ex, self.target.model)
            )
            if not verdict.ok or final:
                break
            call = ex.transcript.calls()[0]
            messages = [
                *messages,
                _assistant_turn(ex),
                {
                    "role": "tool",
                    "tool_call_id": call.id or "call_0",
                    "content": tool_result(call.arguments, round_no),
                },
            ]
            if round_no + 1 < self.profile.tool_rounds:  # steer the next call, as an agent harness does
                messages.append({"role": "user", "content": next_step(CITIES[(round_no + 1) % len(CITIES)])})
            await asyncio.sleep(0)
        timings = session_timings(turns, turns[0].started, time.monotonic(), [])
        return _outcome(p, verdict, timings, turns, sent)


def _outcome(p: Planned, verdict: Verdict, timings: Timings, turns: list[Exchange], sent: float) -> Outcome:
    prompt = turns[0].transcript.usage_int("prompt_tokens")
    outs = [ex.transcript.usage_int("completion_tokens") for ex in turns]
    output = sum(o for o in outs if o is not None) if any(o is not None for o in outs) else None
    return Outcome(p, verdict.reason, verdict.detail, timings, prompt, output, sent, turns[0].sent)
