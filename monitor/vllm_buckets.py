"""vLLM's default histogram bucket edges, defined once (vLLM 0.33 ``vllm/v1/metrics/buckets.py``).

The simulator exposes exactly these; the rule generator checks that a server-side SLO threshold
is one of them, so the SLI is exact. The collector never assumes them: it reads ``le`` from each
page, because ``--custom-histogram-buckets`` (0.33) and older releases differ.
"""

from __future__ import annotations

from typing import Final

#: e2e, queue, prefill, decode and inference time.
REQUEST_LATENCY: Final = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                          60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
#: Time to first token.
TIME_TO_FIRST_TOKEN: Final = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                              5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
#: Inter-token latency and per-request time per output token.
INTER_TOKEN_LATENCY: Final = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                              5.0, 7.5, 10.0, 20.0, 40.0, 80.0)  # fmt: skip
ITERATION_TOKENS: Final = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
REQUEST_PARAMS_N: Final = (1, 2, 5, 10, 20)
REQUEST_NUM_PREEMPTIONS: Final = (1, 2, 3, 4, 5, 10, 20)


def request_tokens(max_model_len: int) -> tuple[float, ...]:
    """``build_1_2_5_buckets(max_model_len)``: 1, 2, 5, 10, 20, 50, ... up to ``max_model_len``."""
    out: list[float] = []
    scale = 1
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * scale
            if value > max_model_len:
                return tuple(out)
            out.append(float(value))
        scale *= 10
