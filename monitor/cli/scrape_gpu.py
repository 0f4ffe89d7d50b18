"""``m3mon scrape`` on a GPU exporter page (dcgm-exporter or AMD device metrics exporter)."""

from __future__ import annotations

from typing import Any


def gpu_document(target: str, since: str | None, text: str, at: float,
                 older: tuple[str, float] | None, partial: bool) -> dict[str, Any]:  # fmt: skip
    """The ``--json`` object of a GPU page (keys in docs/collector.md "GPU pages")."""
    from monitor.scrape.fingerprint import Fingerprint
    from monitor.scrape.gpu import read_gpu_text
    from monitor.scrape.gpu_signals import gpu_signals

    newer = read_gpu_text(text, at, partial=partial)
    prior = read_gpu_text(older[0], older[1], partial=partial) if older else None
    fp = Fingerprint(backend="", generation="").with_gpu(newer)
    return {
        "target": target,
        "since": since,
        "page": "gpu",
        "exporter": newer.exporter,
        "fingerprint": {
            "gpu_exporter": fp.gpu_exporter,
            "gpu_model": fp.gpu_model,
            "gpu_count": fp.gpu_count,
            "gpu_driver_version": fp.gpu_driver_version,
            "gpu_firmware_version": fp.gpu_firmware_version,
            "hostname": newer.hostname,
        },
        "gpu": gpu_signals(target, newer, prior).to_dict(),
    }


def _fmt(value: Any, scale: float = 1.0, unit: str = "") -> str:
    return "-" if value is None else f"{value * scale:.4g}{unit}"


def gpu_table(doc: dict[str, Any]) -> str:
    """The human form of :func:`gpu_document`."""
    fp, g = doc["fingerprint"], doc["gpu"]
    agg = g["endpoint_total"]
    span = f"interval {g['duration']:.1f}s" if g["duration"] is not None else "one page"
    gib = 1 / 2**30
    lines = [
        f"{doc['target']}: GPU page ({doc['exporter']}) {agg['gpus']} x {fp['gpu_model'] or '?'}  {span}",
        f"  driver={fp['gpu_driver_version'] or '?'} firmware={fp['gpu_firmware_version'] or '?'} "
        f"host={fp['hostname'] or '?'}",
        f"  endpoint: util mean={_fmt(agg['util_mean'], 100, '%')} max={_fmt(agg['util_max'], 100, '%')} "
        f"sm_active={_fmt(agg['sm_active_mean'])} tensor_active={_fmt(agg['tensor_active_mean'])} "
        f"power={_fmt(agg['power_watts'], 1, 'W')} "
        f"fullest memory={_fmt(agg['memory_used_ratio_max'], 100, '%')}",
        f"  {'gpu':<6}{'util':>8}{'sm':>8}{'tensor':>8}{'mem used':>12}{'mem free':>12}"
        f"{'power':>9}{'xid':>6}",
    ]
    for name, d in g["gpus"].items():
        lines.append(
            f"  {name:<6}{_fmt(d['util'], 100, '%'):>8}{_fmt(d['sm_active']):>8}{_fmt(d['tensor_active']):>8}"
            f"{_fmt(d['memory_used_bytes'], gib, 'GiB'):>12}{_fmt(d['memory_free_bytes'], gib, 'GiB'):>12}"
            f"{_fmt(d['power_watts'], 1, 'W'):>9}{d['xid'] or '-':>6}"
        )
    lines.extend(f"  note: {n}" for n in g["notes"])
    return "\n".join(lines)
