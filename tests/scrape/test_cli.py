"""``m3mon scrape`` on fixture files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from monitor.cli import main
from tests.scrape.conftest import FIXTURES


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["scrape", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(FIXTURES / "vllm-0.13.0.metrics.txt"), "--threshold", "0.5")
    assert code == 0
    assert "vllm-v1-engine" in out and "cumulative" in out and "stop=150" in out
    assert "ttft" in out and "<=0.5" in out and "0.5805" in out  # 119/205


def test_json_cumulative(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, str(FIXTURES / "sglang-0.5.23.multiprocess.metrics.txt"), "--json", "--threshold", "5"
    )
    doc = json.loads(out)
    assert code == 0
    assert set(doc) == {
        "target",
        "since",
        "page",
        "thresholds",
        "models",
        "fingerprint",
        "signals",
        "by_model",
    }
    s = doc["signals"]
    assert s["backend"] == "sglang" and s["total"]["finished"] == {"abort": 13, "completed": 187}
    assert s["total"]["histograms"]["e2e"]["under"]["5"] == {
        "fraction": pytest.approx(0.6475),
        "exact": False,
    }
    assert doc["fingerprint"]["block_size"] == 128 and doc["fingerprint"]["max_model_len"] == 131072


def test_json_interval_between_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = (FIXTURES / "vllm-0.33-3models-2engines.metrics.txt").read_text()
    older = tmp_path / "old.txt"
    newer = tmp_path / "new.txt"
    older.write_text(src)
    newer.write_text(src.replace('finished_reason="stop",model_name="org/model-b"} 20.0',
                                 'finished_reason="stop",model_name="org/model-b"} 50.0'))  # fmt: skip
    os.utime(older, (1000, 1000))
    os.utime(newer, (1010, 1010))
    code, out, _ = run(capsys, str(newer), "--since", str(older), "--json", "--model", "org/model-b")
    s = json.loads(out)["signals"]
    assert code == 0 and s["duration"] == 10 and s["reset"] is False
    assert s["total"]["finished"]["stop"] == 30 and s["rates"]["requests_per_second"] == 3.0
    assert set(json.loads(out)["by_model"]) == {"MiniMaxAI/MiniMax-M3", "org/model-b", "org/model-c"}


def test_reset_is_marked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    new = tmp_path / "new.txt"
    new.write_text((FIXTURES / "vllm-0.8.5.metrics.txt").read_text().replace("} 158.0", "} 3.0"))
    code, out, _ = run(
        capsys, str(new), "--since", str(FIXTURES / "vllm-0.8.5.metrics.txt"), "--duration", "15"
    )
    assert code == 0 and "RESET" in out


def test_scrape_error_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, str(FIXTURES / "vllm-0.4.x-v0-ibm-fork-bloom-560m-partial.txt"))
    assert code == 1 and "garbled" in err
    code, out, _ = run(capsys, str(FIXTURES / "vllm-0.4.x-v0-ibm-fork-bloom-560m-partial.txt"), "--partial")
    assert code == 0 and "vllm-v0" in out
    (tmp_path / "empty.txt").write_text("")
    code, _, err = run(capsys, str(tmp_path / "empty.txt"))
    assert code == 1 and "empty" in err
    code, _, err = run(capsys, str(tmp_path / "missing.txt"))
    assert code == 1 and "connect_error" in err


GPU_FIXTURES = FIXTURES.parent / "gpu"


def test_gpu_page_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(GPU_FIXTURES / "dcgm-exporter-4.5.3-4.8.2-h200x2.metrics.txt"), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["page"] == "gpu" and doc["exporter"] == "dcgm"
    assert set(doc) == {"target", "since", "page", "exporter", "fingerprint", "gpu"}
    assert doc["fingerprint"] == {"gpu_exporter": "dcgm", "gpu_model": "NVIDIA H200", "gpu_count": 2,
                                  "gpu_driver_version": "570.124.06", "gpu_firmware_version": None,
                                  "hostname": "m3-node-1"}  # fmt: skip
    g = doc["gpu"]
    assert g["driver_version"] == "570.124.06" and g["endpoint_total"]["xid_gpus"] == {"1": 79}
    assert g["gpus"]["1"]["xid"] == 79 and g["gpus"]["0"]["util"] == pytest.approx(0.97)
    assert g["gpus"]["0"]["memory_used_bytes"] == 130887 * 2**20


def test_gpu_page_table_and_interval(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = (GPU_FIXTURES / "amd-dme-afd0fe8-mi300x-x2.metrics.txt").read_text()
    older, newer = tmp_path / "old.txt", tmp_path / "new.txt"
    older.write_text(src)
    newer.write_text(src.replace("} 2.776148269e+09", "} 2.776149269e+09"))  # +1000 KB on one link
    code, out, _ = run(capsys, str(newer), "--since", str(older), "--duration", "10")
    assert code == 0 and "GPU page (amd) 2 x AMD Instinct MI300X  interval 10.0s" in out
    assert "driver=6.12.12 firmware=113-M3000100-102" in out
    code, out, _ = run(capsys, str(newer), "--since", str(older), "--duration", "10", "--json")
    rate = json.loads(out)["gpu"]["gpus"]["0"]["interconnect_bytes_per_second"]
    assert rate == pytest.approx(1000 * 1024 / 10)
