"""The image probe: a single-colour PNG drawn in memory; the model must name the colour.

The colour is drawn per run from a small palette of colours any vision model names the same
way, so a cached or canned answer cannot pass twice in a row by luck alone.
"""

from __future__ import annotations

import base64
import io
import random

import httpx
from PIL import Image

from monitor.probes.base import single_request
from monitor.probes.exchange import NO_THINKING, SAMPLING, Exchange
from monitor.probes.judge import Verdict, expect_word, judge_answer
from monitor.probes.result import ProbeResult
from monitor.probes.target import ProbeSpec, Target

PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (220, 20, 20),
    "green": (20, 170, 40),
    "blue": (20, 40, 220),
    "yellow": (240, 220, 20),
    "black": (0, 0, 0),
    "white": (255, 255, 255),
}
PROMPT = "What single colour fills this image? Answer with one word: the colour name."


def square_png(rgb: tuple[int, int, int], size: int = 64) -> bytes:
    """A ``size``×``size`` PNG filled with ``rgb``."""
    buf = io.BytesIO()
    Image.new("RGB", (size, size), rgb).save(buf, format="PNG")
    return buf.getvalue()


def image_message(png: bytes, text: str = PROMPT) -> dict[str, object]:
    url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": text}],
    }


async def probe(target: Target, spec: ProbeSpec, client: httpx.AsyncClient) -> ProbeResult:
    colour = random.choice(sorted(PALETTE))
    params = {**SAMPLING, **NO_THINKING, "max_tokens": spec.max_tokens}

    def check(ex: Exchange) -> Verdict:
        verdict = judge_answer(ex, target.model)
        return verdict if not verdict.ok else expect_word(ex.transcript.content, colour)

    extra = {"colour_index": float(sorted(PALETTE).index(colour))}
    messages = [image_message(square_png(PALETTE[colour]))]
    return await single_request(target, spec, client, messages, params, check, extra=extra)
