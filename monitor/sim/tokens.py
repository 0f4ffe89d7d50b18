"""The simulator's approximate tokenizer, chat rendering and prefix-cache block hashes.

Tokenizer rule (deterministic, documented in docs/simulator.md): a token is optional leading
whitespace followed by 1-4 non-space characters; trailing whitespace is one more token. So an
English word of up to 4 letters is one token, longer words take ``ceil(len / 4)`` tokens, and
the pieces concatenate back to the exact text (generated output is streamed piece by piece).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

_TOKEN = re.compile(r"\s*\S{1,4}|\s+")


def tokenize(text: str) -> list[str]:
    """Token pieces of ``text``; ``"".join(tokenize(t)) == t``."""
    return _TOKEN.findall(text)


def count_tokens(text: str) -> int:
    """Number of tokens :func:`tokenize` yields (``findall`` is several times faster than counting
    ``finditer`` matches in Python; request planning calls this on every request)."""
    return len(_TOKEN.findall(text))


def message_text(content: Any) -> str:
    """The text parts of an OpenAI message ``content`` (string or list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def render_chat(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> str:
    """The prompt text a chat template would build: tools, then each message, then the reply cue."""
    parts: list[str] = []
    if tools:
        parts.append("<tools>" + json.dumps(list(tools), sort_keys=True) + "</tools>\n")
    for m in messages:
        body = message_text(m.get("content"))
        if m.get("tool_calls"):
            body += json.dumps(m["tool_calls"], sort_keys=True)
        parts.append(f"<{m.get('role', 'user')}>\n{body}\n")
    parts.append("<assistant>\n")
    return "".join(parts)


def block_hashes(tokens: Sequence[str], block_size: int) -> list[bytes]:
    """Chained hashes of each *full* block of ``block_size`` tokens (vLLM's prefix-cache keys)."""
    return list(_iter_block_hashes(tokens, block_size))


def _iter_block_hashes(tokens: Sequence[str], block_size: int) -> Iterator[bytes]:
    parent = b""
    for start in range(0, len(tokens) - block_size + 1, block_size):
        h = hashlib.sha256(parent)
        h.update("\x1f".join(tokens[start : start + block_size]).encode())
        parent = h.digest()
        yield parent
