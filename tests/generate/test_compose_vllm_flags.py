"""compose.yaml starts vLLM with what the monitor reads from it: request spans over OTLP/HTTP to the
monitor's ``/v1/traces``, prompt-token details for the long-prompt probe's cached tokens, and the
KV residency histograms of the bottleneck verdict (flags: /work/shared/reference/vllm-surface.md)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import yaml


def test_vllm_services_export_what_the_signals_read(generated: Path) -> None:
    compose = yaml.safe_load((generated / "compose.yaml").read_text())
    config = yaml.safe_load((generated / "deploy/monitor.yaml").read_text())
    listen = config["exporter"]["listen"]
    vllm = {n: s for n, s in compose["services"].items() if n.startswith("vllm-")}
    assert len(vllm) == len(config["endpoints"])
    for service in vllm.values():
        args = service["command"]
        traces = args[args.index("--otlp-traces-endpoint") + 1]
        url = urlsplit(traces.removeprefix("${OTLP_TRACES_ENDPOINT:-").removesuffix("}"))
        assert (url.netloc, url.path) == (listen, "/v1/traces")
        assert service["environment"]["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
        assert "--enable-prompt-tokens-details" in args  # usage.prompt_tokens_details.cached_tokens
        assert "--kv-cache-metrics" in args  # vllm:kv_block_lifetime_seconds and the other two
