"""Build a Qwen2 model slow enough at prefill for prefill to own the first token on a CPU (run with
the vLLM venv): ``python build_prefill_model.py OUT_DIR TINY_DIR``.

The tier's tiny model (:mod:`tests.real_vllm.build_model`: hidden 128, 2 layers) prefills 1,900
tokens in about 85 ms, no more than the API server's own time around it on a 2-core machine, so
no stage owns its first token. This one keeps the tiny model's tokenizer and chat template
(copied from ``TINY_DIR``) and widens the network: hidden 512, 6 layers, 8 heads of head_dim 64,
an MLP of 1,536 — about 20 M parameters, 43 MB — so the same prompt takes about a second to
prefill and a few tens of milliseconds to decode four tokens. Seeded random weights:
deterministic, a few seconds to build. Nothing is downloaded.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

#: The tokenizer and template files taken from the tiny model (same vocabulary and specials).
COPIED = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")
HIDDEN, LAYERS, MLP = 512, 6, 1536


def main(out: Path, tiny: Path) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        if (tiny / name).exists():
            shutil.copy(tiny / name, out / name)
    small = json.loads((tiny / "config.json").read_text())
    torch.manual_seed(13)
    config = Qwen2Config(
        vocab_size=small["vocab_size"], hidden_size=HIDDEN, intermediate_size=MLP, num_hidden_layers=LAYERS,
        num_attention_heads=HIDDEN // 64, num_key_value_heads=HIDDEN // 64, head_dim=64,
        max_position_embeddings=small["max_position_embeddings"], tie_word_embeddings=True,
        torch_dtype="bfloat16", eos_token_id=small["eos_token_id"], pad_token_id=small["pad_token_id"],
        bos_token_id=None,
    )  # fmt: skip
    Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
