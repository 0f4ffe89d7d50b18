"""Prompts sized by the server's own tokenizer: calibrated once per deployment fingerprint.

A character-per-token estimate is wrong on a tokenizer that is not the one it was made for: a
"1,500-token" prompt of short English words was 3,484 tokens on the real-vLLM tier's tiny
byte-level BPE, and the server rightly refused it as over its 2,048 context. So every probe with
a token budget builds its text from filler sentences (:func:`filler`) whose cost is measured on
the endpoint itself:

1. ``POST /tokenize`` (vLLM and SGLang both serve it; body ``{"model", "prompt"}``, answer with
   ``count`` or a ``tokens`` list) on a fixed sample of :data:`SAMPLE_SENTENCES` sentences gives the
   tokens per sentence; the same call with ``messages`` (vLLM; SGLang refuses it) gives the chat
   template's overhead (else :data:`TEMPLATE_ALLOWANCE` is assumed).
2. Without ``/tokenize``: two non-streamed chat requests (``max_tokens: 1``), an empty one and one
   with the sample, and their ``usage.prompt_tokens``.
3. When neither answers: :data:`ESTIMATE_PER_SENTENCE`, not cached (tried again next time).

A calibration is kept per deployment fingerprint (base URL, model, ``/version``, ``/v1/models``
``max_model_len``): a new server version or context length calibrates again. The sentence count
keeps a :data:`MARGIN` below the budget, so a prompt meant to be under a ceiling is under it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Final, Literal

import httpx

from monitor.model import Endpoint

#: Short common words: one token each in large BPE vocabularies, a few in small ones.
_WORD_TEXT = (
    "the old man saw a red fox run by his big blue boat on the calm lake near town each day and "
    "the sun was warm over the hill as we sat with tea and kids play in the park"
)
WORDS: Final = tuple(_WORD_TEXT.split())
SENTENCE_WORDS: Final = 12
#: Tokens per sentence assumed when the server cannot be asked (12 one-token words and a period).
ESTIMATE_PER_SENTENCE: Final = 13.0
SAMPLE_SENTENCES: Final = 64
SAMPLE_SEED: Final = 1_000_003
TEMPLATE_ALLOWANCE: Final = 64
MARGIN: Final = 0.04
TIMEOUT: Final = 10.0

Source = Literal["tokenize", "usage", "estimate"]


@dataclass(frozen=True)
class Calibration:
    """What one filler sentence and the fixed rest of a chat prompt cost on one deployment."""

    per_sentence: float  # server tokens per filler sentence (sample mean)
    overhead: int  # chat template tokens around one user message
    source: Source

    def sentences(self, tokens: int, fixed: int = 0) -> int:
        """Filler sentences that keep a user message of ``fixed`` other tokens within ``tokens``."""
        room = tokens * (1 - MARGIN) - self.overhead - fixed
        return max(1, math.floor(room / self.per_sentence))

    def over(self, tokens: int, fixed: int = 0) -> int:
        """Filler sentences that make such a message surely longer than ``tokens``."""
        room = tokens * (1 + MARGIN) - fixed
        return max(1, math.ceil(room / self.per_sentence))


ESTIMATE: Final = Calibration(ESTIMATE_PER_SENTENCE, TEMPLATE_ALLOWANCE, "estimate")
_CACHE: dict[tuple[str, ...], Calibration] = {}


def filler(count: int, rng: random.Random) -> list[str]:
    """``count`` sentences of :data:`SENTENCE_WORDS` common words each."""
    return [
        " ".join(rng.choice(WORDS) for _ in range(SENTENCE_WORDS)).capitalize() + "." for _ in range(count)
    ]


def _sample() -> str:
    return " ".join(filler(SAMPLE_SENTENCES, random.Random(SAMPLE_SEED)))


async def post(client: httpx.AsyncClient, endpoint: Endpoint, path: str, body: dict[str, Any]) -> Any:
    url = endpoint.base_url.rstrip("/") + path
    try:
        response = await client.post(url, json=body, headers=endpoint.headers(), timeout=TIMEOUT)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


async def _get(client: httpx.AsyncClient, endpoint: Endpoint, path: str) -> Any:
    try:
        response = await client.get(endpoint.base_url.rstrip("/") + path, headers=endpoint.headers(),
                                    timeout=TIMEOUT)  # fmt: skip
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def count_of(doc: Any) -> int | None:
    """``count`` (vLLM, SGLang) or the length of ``tokens`` from a ``/tokenize`` answer."""
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("count"), int):
        return int(doc["count"])
    return len(doc["tokens"]) if isinstance(doc.get("tokens"), list) else None


async def server_tokens(client: httpx.AsyncClient, endpoint: Endpoint, text: str) -> int | None:
    """Tokens the endpoint's tokenizer makes of ``text`` (``POST /tokenize``); None if unanswered."""
    body = {"model": endpoint.model, "prompt": text, "add_special_tokens": False}
    return count_of(await post(client, endpoint, "/tokenize", body))


async def by_tokenize(client: httpx.AsyncClient, endpoint: Endpoint) -> Calibration | None:
    """Step 1 of the module docstring; None when ``/tokenize`` does not answer."""
    text = _sample()
    plain = await server_tokens(client, endpoint, text)
    if plain is None:
        return None
    chat = {
        "model": endpoint.model,
        "messages": [{"role": "user", "content": text}],
        "add_generation_prompt": True,
    }
    templated = count_of(await post(client, endpoint, "/tokenize", chat))
    overhead = templated - plain if templated is not None and templated >= plain else TEMPLATE_ALLOWANCE
    return Calibration(plain / SAMPLE_SENTENCES, overhead, "tokenize")


async def _usage_tokens(client: httpx.AsyncClient, endpoint: Endpoint, text: str) -> int | None:
    body = {"model": endpoint.model, "messages": [{"role": "user", "content": text}], "max_tokens": 1}
    doc = await post(client, endpoint, "/v1/chat/completions", body)
    usage = doc.get("usage") if isinstance(doc, dict) else None
    value = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return int(value) if isinstance(value, int) else None


async def by_usage(client: httpx.AsyncClient, endpoint: Endpoint) -> Calibration | None:
    """Step 2 of the module docstring (two ``max_tokens: 1`` chats); None when they do not answer."""
    empty = await _usage_tokens(client, endpoint, ".")
    full = await _usage_tokens(client, endpoint, _sample())
    if empty is None or full is None or full <= empty:
        return None
    return Calibration((full - empty) / SAMPLE_SENTENCES, empty, "usage")


async def fingerprint_key(client: httpx.AsyncClient, endpoint: Endpoint) -> tuple[str, ...]:
    """The deployment a calibration belongs to: URL, model, ``/version``, ``max_model_len``."""
    version = await _get(client, endpoint, "/version")
    models = await _get(client, endpoint, "/v1/models")
    data = models.get("data") if isinstance(models, dict) else None
    cards = [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
    card = next((d for d in cards if d.get("id") == endpoint.model), {})
    ver = version.get("version") if isinstance(version, dict) else None
    return (endpoint.base_url, endpoint.model, str(ver), str(card.get("max_model_len")))


async def calibrate(client: httpx.AsyncClient, endpoint: Endpoint) -> Calibration:
    """The endpoint's :class:`Calibration`, measured once per deployment fingerprint."""
    key = await fingerprint_key(client, endpoint)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    found = await by_tokenize(client, endpoint) or await by_usage(client, endpoint)
    if found is None:
        return ESTIMATE
    _CACHE[key] = found
    return found


async def prompt_of_tokens(
    client: httpx.AsyncClient, endpoint: Endpoint, tokens: int, *, seed: int = 0, prefix: str = ""
) -> str:
    """A user message the endpoint counts as at most ``tokens`` prompt tokens, chat template included.

    Signature: ``await prompt_of_tokens(client, endpoint, tokens, *, seed=0, prefix="") -> str``
    with ``client`` an ``httpx.AsyncClient``, ``endpoint`` a :class:`monitor.model.Endpoint`
    (``base_url``, ``model``, credentials) and ``tokens`` the budget of the whole prompt. The text
    is ``prefix`` followed by filler sentences drawn from ``random.Random(seed)``; it comes within
    about :data:`MARGIN` (plus one sentence) below the budget when the server could be asked. For a
    replay of recorded prompt sizes, call it once per size; calibration is cached per deployment.
    """
    cal = await calibrate(client, endpoint)
    fixed = await server_tokens(client, endpoint, prefix) if prefix and cal.source == "tokenize" else None
    fixed = fixed if fixed is not None else math.ceil(len(prefix) / 2)
    body = " ".join(filler(cal.sentences(tokens, fixed), random.Random(seed)))
    return f"{prefix} {body}".strip() if prefix else body
