"""``m3mon sim``: run the MiniMax-M3-on-vLLM endpoint simulator (see docs/simulator.md)."""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from monitor.sim.config import VLLM_VERSION, SimConfig

_D = SimConfig()


def port(text: str) -> int:
    """A TCP port to bind: 1-65535 (argparse reports anything else as a usage error, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port from 1 to 65535, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 1 to 65535, got {value}")
    return value


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "sim",
        help="run a simulated vLLM server serving MiniMax-M3 (for tests and demos)",
        description=f"Serve an imitation of vLLM {VLLM_VERSION} running MiniMaxAI/MiniMax-M3 with "
        "--block-size 128 --tool-call-parser minimax_m3 --reasoning-parser minimax_m3: the OpenAI API "
        "(chat, completions, models), /health, /version, /load, /metrics with vLLM's exact families, "
        "OTLP request spans, plus /sim/truth (ground truth), /sim/faults (fault switches) and "
        "/sim/stats. A real scheduler (slots, FIFO queue, chunked prefill, prefix cache, KV pool with "
        "preemption, speculative decoding) drives every timing; all random draws come from --seed.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    a = p.add_argument
    a("--host", default=_D.host, help="address to bind")
    a("--port", type=port, default=_D.port, help="port to bind (1-65535)")
    a("--model", default=_D.model, help="served model name (model_name label, /v1/models id)")
    a("--max-model-len", type=int, default=_D.max_model_len, help="context length in tokens")
    a("--block-size", type=int, default=_D.block_size, help="KV-cache block size in tokens")
    a("--max-num-seqs", type=int, default=_D.max_num_seqs, help="running slots of the scheduler")
    a("--max-num-batched-tokens", type=int, default=_D.max_num_batched_tokens, help="token budget per step")
    a("--max-queue", type=int, default=_D.max_queue, help="waiting-queue bound; beyond it requests get 429")
    a("--kv-blocks", type=int, default=_D.kv_blocks, help="KV-cache pool size in blocks (num_gpu_blocks)")
    a("--prefill-tps", type=float, default=_D.prefill_tps, help="prefill speed, uncached tokens per second")
    a(
        "--prefill-overhead",
        type=float,
        default=_D.prefill_overhead,
        help="fixed seconds added to a prefill step",
    )
    a("--decode-itl", type=float, default=_D.decode_itl, help="decode step seconds with a batch of one")
    a(
        "--batch-slowdown",
        type=float,
        default=_D.batch_slowdown,
        help="extra step time at a full batch, as a fraction of --decode-itl",
    )
    a("--jitter", type=float, default=_D.jitter, help="uniform +- fraction applied to each step")
    a("--spec-tokens", type=int, default=_D.spec_tokens, help="speculative tokens per step (0 disables)")
    a(
        "--spec-acceptance",
        default=",".join(map(str, _D.spec_acceptance)),
        help="conditional acceptance probability per draft position, comma separated",
    )
    a("--preprocess-overhead", type=float, default=_D.preprocess_overhead,
      help="seconds of API-server preprocessing per request before the engine queues it")  # fmt: skip
    a("--tokenize-tps", type=float, default=_D.tokenize_tps, help="tokenizer speed, prompt tokens per second")
    a("--reasoning-tokens", type=int, default=_D.reasoning_tokens, help="reasoning length when thinking")
    a("--seed", type=int, default=_D.seed, help="seed of every random draw")
    a("--faults", default=None, metavar="JSON", help="initial faults, e.g. '{\"error_rate\": 0.1}'")
    a("--startup-delay", type=float, default=_D.startup_delay, help="seconds /health answers 503 (loading)")
    a("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1 paths")
    a(
        "--otlp-traces-endpoint",
        default=None,
        metavar="URL",
        help="export llm_request spans with OTLP/HTTP protobuf to URL (/v1/traces added if no path)",
    )
    a("--enable-per-request-metrics", action="store_true", help="add the 'metrics' object to responses")
    a("--tenant-span-attributes", action="store_true",
      help="spans also carry the request's user (user.id) and priority (vllm.request.priority), "
      "as a gateway in front of vLLM adds them")  # fmt: skip
    a("--disable-prompt-tokens-details", action="store_true", help="omit usage.prompt_tokens_details")
    a(
        "--dcgm-gpus",
        type=int,
        default=_D.dcgm_gpus,
        metavar="N",
        help="also serve a dcgm-exporter page of N GPUs at /dcgm/metrics, driven by the load (0: off)",
    )
    a(
        "--kv-cache-metrics",
        action="store_true",
        help="serve vLLM's vllm:kv_block_* residency histograms (as vLLM's --kv-cache-metrics)",
    )
    a(
        "--kv-cache-metrics-sample",
        type=float,
        default=_D.kv_cache_metrics_sample,
        metavar="SHARE",
        help="share of KV blocks sampled for the residency histograms (0..1)",
    )
    a("--log-requests", action="store_true", help="uvicorn access log")
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> SimConfig:
    """The :class:`SimConfig` the flags describe (raises FaultError on bad --faults)."""
    from monitor.sim.faults import parse_faults

    return SimConfig(
        host=args.host,
        port=args.port,
        model=args.model,
        max_model_len=args.max_model_len,
        block_size=args.block_size,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_queue=args.max_queue,
        kv_blocks=args.kv_blocks,
        prefill_tps=args.prefill_tps,
        prefill_overhead=args.prefill_overhead,
        preprocess_overhead=args.preprocess_overhead,
        tokenize_tps=args.tokenize_tps,
        decode_itl=args.decode_itl,
        batch_slowdown=args.batch_slowdown,
        jitter=args.jitter,
        spec_tokens=args.spec_tokens,
        spec_acceptance=tuple(float(x) for x in str(args.spec_acceptance).split(",") if x.strip()),
        reasoning_tokens=args.reasoning_tokens,
        seed=args.seed,
        faults=parse_faults(args.faults),
        startup_delay=args.startup_delay,
        api_key=args.api_key,
        otlp_traces_endpoint=args.otlp_traces_endpoint,
        enable_per_request_metrics=args.enable_per_request_metrics,
        tenant_span_attributes=args.tenant_span_attributes,
        enable_prompt_tokens_details=not args.disable_prompt_tokens_details,
        dcgm_gpus=args.dcgm_gpus,
        kv_cache_metrics=args.kv_cache_metrics,
        kv_cache_metrics_sample=args.kv_cache_metrics_sample,
    )


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from monitor.errors import UsageError
    from monitor.sim.app import create_app, tune_gc
    from monitor.sim.faults import FaultError
    from monitor.sim.wire import StampingHttpToolsProtocol

    try:
        cfg = config_from_args(args)
    except FaultError as exc:  # a bad --faults value: bad input
        raise UsageError(str(exc)) from None
    if not 0 <= cfg.dcgm_gpus <= 64:
        raise UsageError(f"--dcgm-gpus: expected 0 to 64 GPUs, got {cfg.dcgm_gpus}")
    if not 0.0 <= cfg.kv_cache_metrics_sample <= 1.0:
        raise UsageError(
            f"--kv-cache-metrics-sample: expected a share from 0 to 1, got {cfg.kv_cache_metrics_sample:g}"
        )
    sock = _bind(cfg.host, cfg.port)  # a taken port fails here, before anything is printed
    print(
        f"m3mon sim: vLLM {VLLM_VERSION} imitation serving {cfg.model} on http://{cfg.host}:{cfg.port}",
        flush=True,
    )
    app = create_app(cfg)
    tune_gc()
    config = uvicorn.Config(
        app,
        http=StampingHttpToolsProtocol,
        host=cfg.host,
        port=cfg.port,
        log_level="info" if args.log_requests else "warning",
        access_log=args.log_requests,
    )
    with sock:
        uvicorn.Server(config).run(sockets=[sock])
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the server starts: a taken or unusable address is one
    line (:class:`~monitor.errors.ServiceError`, exit 1, as ``m3mon run`` on a taken address)."""
    from monitor.errors import ServiceError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ServiceError(f"cannot listen on {host}:{port} (--host/--port): {why}") from None
