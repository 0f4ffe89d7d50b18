"""GPU exporter pages (tests/fixtures/gpu, cited in its SOURCES.md) parse exactly.

Expected values are the pages' own numbers in the exporters' documented units (DCGM: % and MiB;
AMD: % and MB), converted by hand here, not by the code under test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.errors import ScrapeError
from monitor.scrape.gpu import detect, is_gpu_page, read_gpu_text
from monitor.scrape.gpu_signals import gpu_signals
from monitor.scrape.page import parse

GPU = Path(__file__).resolve().parent.parent / "fixtures" / "gpu"
ENGINE = Path(__file__).resolve().parent.parent / "fixtures" / "metrics"
MIB = 1024 * 1024


def text(name: str) -> str:
    return (GPU / name).read_text(encoding="utf-8")


def test_dcgm_readme_pages_verbatim() -> None:
    for name in ("dcgm-exporter-readme-docker.txt", "dcgm-exporter-readme-kubernetes.txt"):
        r = read_gpu_text(text(name), 5.0)
        assert r.exporter == "dcgm" and list(r.devices) == ["0"]
        dev = r.devices["0"]
        assert dev.uuid == "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
        assert dev.gauges == {} and dev.counters == {}  # clocks are not mapped; MEMORY_TEMP is blank
        assert r.driver_version is None
        assert r.notes == ()  # the blank MEMORY_TEMP is not a mapped family: nothing to skip


def test_dcgm_default_counters_page() -> None:
    r = read_gpu_text(text("dcgm-exporter-4.5.3-4.8.2-h200x2.metrics.txt"), 100.0)
    assert r.exporter == "dcgm" and list(r.devices) == ["0", "1"]
    assert r.driver_version == "570.124.06" and r.firmware_version is None
    assert r.hostname == "m3-node-1" and r.model == "NVIDIA H200"
    g0, g1 = r.devices["0"].gauges, r.devices["1"].gauges
    assert g0 == {
        "gr_engine_active": 0.953112,
        "memory_active": 0.563201,
        "memory_copy_util": pytest.approx(0.41),
        "memory_free_bytes": 12035 * MIB,
        "memory_used_bytes": 130887 * MIB,
        "power_watts": 612.437,
        "sm_active": 0.871245,
        "temperature_celsius": 61.0,
        "tensor_active": 0.412877,
        "util": pytest.approx(0.97),
        "xid": 0.0,
    }
    assert g1["xid"] == 79 and g1["util"] == pytest.approx(0.94) and g1["memory_used_bytes"] == 130935 * MIB
    assert r.devices["0"].counters == {"interconnect_bytes": 431875519488.0}
    assert r.devices["1"].uuid == "GPU-9b0f6d2e-1c4a-4e7b-8d33-5a6e7f8c9d21"


def test_dcgm_endpoint_aggregate() -> None:
    s = gpu_signals("ep", read_gpu_text(text("dcgm-exporter-4.5.3-4.8.2-h200x2.metrics.txt"), 1.0))
    agg = s.aggregate()
    assert agg["gpus"] == 2 and agg["xid_gpus"] == {"1": 79}
    assert agg["util_mean"] == pytest.approx((0.97 + 0.94) / 2) and agg["util_max"] == pytest.approx(0.97)
    assert agg["sm_active_max"] == 0.871245
    assert agg["power_watts"] == pytest.approx(612.437 + 587.129)
    assert agg["memory_used_ratio_max"] == pytest.approx(130935 / (130935 + 11987))
    assert agg["interconnect_bytes_per_second"] is None  # one page: no rate


def test_dcgm_hostname_label_after_the_rename_and_a_rate_between_two_pages() -> None:
    older_text = text("dcgm-exporter-4.5.3-4.8.2-h200x2.metrics.txt").replace("Hostname=", "hostname=")
    newer_text = older_text.replace("} 431875519488", "} 431885519488")
    older, newer = read_gpu_text(older_text, 100.0), read_gpu_text(newer_text, 110.0)
    assert newer.hostname == "m3-node-1"
    s = gpu_signals("ep", newer, older)
    assert s.devices["0"].interconnect_bytes_per_second == pytest.approx(10_000_000 / 10)
    assert s.devices["1"].interconnect_bytes_per_second == 0.0 and s.reset is False


def test_amd_doc_xgmi_example_verbatim() -> None:
    r = read_gpu_text(text("amd-dme-metricslist-xgmi.txt"), 1.0)
    assert r.exporter == "amd" and list(r.devices) == ["0"] and r.hostname == "xxxx"
    rx = [0, 2.776148269e09, 2.914491813e09, 2.853215723e09, 2.857943554e09, 2.859773597e09,
          2.852296682e09, 2.757052542e09]  # fmt: skip
    tx = [
        0,
        3.539423344e09,
        3.708415141e09,
        3.639806555e09,
        3.675549728e09,
        3.657430314e09,
        3.646094607e09,
        3.545990503,
    ]  # fmt: skip  (the doc's last value is cut to e+0)
    assert r.devices["0"].counters["interconnect_bytes"] == pytest.approx((sum(rx) + sum(tx)) * 1024)


def test_amd_mi300x_page() -> None:
    r = read_gpu_text(text("amd-dme-afd0fe8-mi300x-x2.metrics.txt"), 1.0)
    assert r.exporter == "amd" and r.prefix == "" and list(r.devices) == ["0", "1"]
    assert (r.driver_version, r.firmware_version) == ("6.12.12", "113-M3000100-102")
    assert r.model == "AMD Instinct MI300X" and r.hostname == "m3-mi300x-1"
    g0 = r.devices["0"].gauges
    assert r.devices["0"].counters["ecc_uncorrectable"] == 0.0
    assert g0 == {
        "memory_active": pytest.approx(0.44),
        "memory_free_bytes": 15741 * MIB,
        "memory_used_bytes": 180851 * MIB,
        "power_watts": 731.0,  # gpu_package_power (rank 0) over gpu_power_usage
        "sm_active": pytest.approx(0.884),
        "temperature_celsius": 78.0,
        "tensor_active": pytest.approx(0.467),
        "util": pytest.approx(0.96),
    }
    assert r.devices["0"].uuid == "5aff74a1-0000-1000-80fd-c2b6f3c1a9e1"
    assert r.devices["1"].counters["interconnect_bytes"] == 1024 * (
        sum([2801337120, 0, 2899014456, 2861230017, 2870044219, 2848817703, 2860119842, 2772530016])
        + sum([3561204418, 0, 3698112730, 3644017321, 3670051984, 3649982117, 3651203360, 3550118247])
    )


def test_amd_metrics_field_prefix() -> None:
    prefixed = (
        text("amd-dme-afd0fe8-mi300x-x2.metrics.txt")
        .replace("gpu_", "amd_gpu_")
        .replace("amd_gpu_id=", "gpu_id=")
    )
    prefixed = prefixed.replace("amd_gpu_uuid=", "gpu_uuid=").replace("amd_gpu_compute", "gpu_compute")
    prefixed = prefixed.replace("amd_gpu_memory_partition", "gpu_memory_partition")
    prefixed = prefixed.replace("amd_gpu_partition_id", "gpu_partition_id")
    r = read_gpu_text(prefixed, 1.0)
    assert r.prefix == "amd_" and r.devices["1"].gauges["util"] == pytest.approx(0.93)


def test_engine_pages_are_not_gpu_pages_and_vice_versa() -> None:
    for page in sorted(ENGINE.glob("*.txt")):
        assert not is_gpu_page(page.read_text(encoding="utf-8")), page.name
        assert detect(parse(page.read_text(encoding="utf-8"), partial=True)) is None
    for page in sorted(GPU.glob("*.txt")):
        assert is_gpu_page(page.read_text(encoding="utf-8")), page.name
    with pytest.raises(ScrapeError, match="no amd exporter families"):
        read_gpu_text(text("dcgm-exporter-4.5.3-4.8.2-h200x2.metrics.txt"), 1.0, "amd")
    with pytest.raises(ScrapeError, match="no dcgm-exporter or AMD"):
        read_gpu_text((ENGINE / "vllm-0.13.0.metrics.txt").read_text(encoding="utf-8"), 1.0)


def test_dcgm_blank_values_are_no_reading() -> None:
    lines = text("dcgm-exporter-4.5.3-4.8.2-h200x2.metrics.txt").splitlines(keepends=True)
    page = "".join(
        line.replace("} 61\n", "} 9223372036854775794\n")
        if line.startswith("DCGM_FI_DEV_GPU_TEMP{")
        else line
        for line in lines
    )
    r = read_gpu_text(page, 1.0)
    assert "temperature_celsius" not in r.devices["0"].gauges
    assert r.devices["1"].gauges["temperature_celsius"] == 58.0
    assert r.notes == ("1 DCGM blank value(s) (no reading) skipped",)
