"""Build the tiny random-weight Qwen2 chat model the real-vLLM tier serves (run with the vLLM venv).

``python build_model.py OUT_DIR`` writes a complete Hugging Face model directory: a byte-level BPE
tokenizer trained with ``tokenizers`` on a seeded synthetic text (:func:`corpus`), with the
ChatML specials and ``<tool_call>``/``</tool_call>`` as added tokens, a Hermes-format tools
``chat_template``, and a ``Qwen2ForCausalLM`` (hidden 128, 2 layers, 2 heads, head_dim 64 — the
CPU attention backend accepts 32/64/80/96/112/128) with seeded random weights as safetensors.
Deterministic (same text, same seeds); about 1.3 MB; a few seconds. Nothing is downloaded.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

VOCAB = 2000
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

# The Hermes tools format (Qwen2.5's template, trimmed): tools in <tools></tools> in the system
# turn, calls as <tool_call>{json}</tool_call>, results in <tool_response></tool_response>.
CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{%- endif %}"
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    "{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call><|im_end|>\n"
    "{%- elif messages[0]['role'] == 'system' %}"
    "<|im_start|>system\n{{ messages[0]['content'] }}<|im_end|>\n{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}"
    "<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{%- elif message.role == 'assistant' %}<|im_start|>assistant"
    "{%- if message.content %}\n{{ message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls | default([]) %}"
    "{%- set tc = tool_call.function if tool_call.function is defined else tool_call %}"
    '\n<tool_call>\n{"name": "{{ tc.name }}", "arguments": '
    "{{ tc.arguments if tc.arguments is string else tc.arguments | tojson }}}\n</tool_call>"
    "{%- endfor %}<|im_end|>\n"
    "{%- elif message.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ message.content }}"
    "\n</tool_response><|im_end|>\n{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def corpus(lines: int = 4000, seed: int = 13) -> list[str]:
    """A deterministic training text: a made-up language of random syllables, with JSON tool-call
    arguments and chat-like lines. Not English on purpose: English words split into several
    tokens, as on a tokenizer that is not the one a prompt estimate was made for. Independent of
    the repository's files, so every build of the model is the same."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["ch", "sh", "th", "qu"]
    keys = ["city", "unit", "name", "arguments", "get_weather", "celsius", "fahrenheit", "Paris", "Lyon"]
    out = []
    for i in range(lines):
        words = [
            "".join(rng.choice(syllables) for _ in range(rng.randint(1, 3)))
            for _ in range(rng.randint(4, 14))
        ]
        line = " ".join(words).capitalize() + rng.choice([".", ".", "?", "!", ","])
        if i % 5 == 0:
            line += " " + json.dumps({rng.choice(keys): rng.choice(keys), "unit": rng.choice(keys[5:7])})
        if i % 7 == 0:
            line += f" {rng.randint(0, 99999)}"
        out.append(line)
    return ["\n".join(out[k : k + 50]) for k in range(0, len(out), 50)]


def build_tokenizer(out: Path, texts: list[str]) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    # <tool_call> must stay a non-special added token: the hermes parser finds it in the text.
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    for entry in cfg.get("added_tokens_decoder", {}).values():
        if entry["content"] in ("<tool_call>", "</tool_call>"):
            entry["special"] = False
    cfg_path.write_text(json.dumps(cfg, indent=2))


def build_weights(out: Path, vocab_size: int, eos: int, pad: int) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(13)
    config = Qwen2Config(
        vocab_size=vocab_size, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
        tie_word_embeddings=True, torch_dtype="bfloat16", eos_token_id=eos, pad_token_id=pad,
        bos_token_id=None,
    )  # fmt: skip
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    gen = {"eos_token_id": eos, "pad_token_id": pad, "do_sample": True}
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2))


def main(out: Path) -> None:
    from transformers import AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    build_tokenizer(out, corpus())
    tok = AutoTokenizer.from_pretrained(out)
    ids = tok.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    build_weights(out, len(tok), int(ids[0]), int(ids[1]))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
