"""Reading OpenAI-style request bodies into what the simulated engine needs, with vLLM's 4xx errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from monitor.sim.answers import Ask
from monitor.sim.config import SimConfig
from monitor.sim.images import ImageInputError, decode_image
from monitor.sim.tokens import block_hashes, render_chat, tokenize


class RequestError(Exception):
    """A request vLLM would refuse; carries the HTTP status and vLLM's error ``type``."""

    def __init__(self, status: int, message: str, type_: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status, self.message, self.type = status, message, type_


@dataclass
class Parsed:
    """A validated request: the answer inputs, prompt size/hashes and sampling parameters."""

    ask: Ask
    prompt_tokens: int
    prompt_hashes: list[bytes]
    stream: bool
    include_usage: bool
    max_tokens: int | None
    ignore_eos: bool
    params: dict[str, Any] = field(default_factory=dict)
    images: int = 0


def parse_chat(body: dict[str, Any], cfg: SimConfig) -> Parsed:
    """Validate a ``/v1/chat/completions`` body."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise RequestError(400, "'messages' must be a non-empty list of message objects")
    tools = body.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) and "function" in t for t in tools):
        raise RequestError(400, "'tools' must be a list of {type: function, function: {...}} objects")
    kwargs = body.get("chat_template_kwargs") or {}
    mode = str(kwargs.get("thinking_mode", "adaptive"))
    if kwargs.get("enable_thinking") is False:
        mode = "disabled"
    if mode not in ("enabled", "disabled", "adaptive"):
        raise RequestError(400, f"thinking_mode must be enabled, disabled or adaptive, got {mode!r}")
    colour, image_tokens, images = None, 0, 0
    for m in messages:
        for part in m.get("content") if isinstance(m.get("content"), list) else ():
            if isinstance(part, dict) and part.get("type") == "image_url":
                url = part.get("image_url", {})
                try:
                    info = decode_image(
                        str(url.get("url", "") if isinstance(url, dict) else url), cfg.image_patch
                    )
                except ImageInputError as exc:
                    raise RequestError(400, str(exc)) from exc
                colour = colour or info.colour
                image_tokens += info.tokens
                images += 1
    tokens = tokenize(render_chat(messages, tools)) + ["<image>"] * image_tokens
    ask = Ask(tuple(messages), tuple(tools), body.get("tool_choice", "auto"), mode, colour)
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    return _finish(body, cfg, ask, tokens, max_tokens, images)


def parse_completion(body: dict[str, Any], cfg: SimConfig) -> Parsed:
    """Validate a ``/v1/completions`` body (one prompt: a string, a one-string list or token ids)."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        tokens = [f"<{t}>" for t in prompt]
        text = " ".join(map(str, prompt))
    elif isinstance(prompt, str) and prompt:
        tokens, text = tokenize(prompt), prompt
    else:
        raise RequestError(400, "'prompt' must be a non-empty string or a list of token ids")
    return _finish(body, cfg, Ask((), raw_prompt=text), tokens, body.get("max_tokens", 16), 0)


def _finish(
    body: dict[str, Any], cfg: SimConfig, ask: Ask, tokens: list[str], max_tokens: Any, images: int
) -> Parsed:
    if max_tokens is not None and (
        not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
    ):
        raise RequestError(400, f"max_tokens must be at least 1, got {max_tokens}.")
    n = body.get("n") or 1
    if n != 1:
        raise RequestError(400, "the simulator supports only n=1")
    prompt = len(tokens)
    _check_context(prompt, max_tokens, cfg.max_model_len)
    opts = body.get("stream_options") or {}
    params = {k: body[k] for k in ("temperature", "top_p", "n") if body.get(k) is not None}
    # the OpenAI ``user`` field and vLLM's ``priority`` (spans carry them with --tenant-span-attributes)
    params.update({k: body[k] for k in ("user", "priority") if isinstance(body.get(k), str | int)})
    return Parsed(
        ask=ask,
        prompt_tokens=prompt,
        prompt_hashes=block_hashes(tokens, cfg.block_size),
        stream=bool(body.get("stream", False)),
        include_usage=bool(opts.get("include_usage", False)) if isinstance(opts, dict) else False,
        max_tokens=max_tokens,
        ignore_eos=bool(body.get("ignore_eos", False)),
        params=params,
        images=images,
    )


def _check_context(prompt: int, max_tokens: int | None, max_model_len: int) -> None:
    if (prompt >= max_model_len and max_tokens is None) or prompt > max_model_len:
        raise RequestError(
            400,
            f"This model's maximum context length is {max_model_len} tokens. However, your request has "
            f"{prompt} input tokens. Please reduce the length of the input messages.",
        )
    if max_tokens is not None and prompt + max_tokens > max_model_len:
        raise RequestError(
            400,
            f"This model's maximum context length is {max_model_len} tokens. However, you requested "
            f"{prompt + max_tokens} tokens ({prompt} in the messages, {max_tokens} in the completion). "
            "Please reduce the length of the messages or completion.",
        )
