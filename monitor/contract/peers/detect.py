"""Read a peer benchmark file, tell its format from its fields, and map it to runs.

Formats (by the fields only their tool writes): ``vllm bench serve --save-result`` (``date``,
``backend``, ``completed``; ``--append-result`` files hold one object per line), GuideLLM's JSON
report (``metadata.guidellm_version``, ``benchmarks``), AIPerf's ``profile_export_aiperf.json``
(``aiperf_version``, ``input_config``). Anything else, a file that is not JSON, or one whose
fields are missing or of the wrong type, or whose figures cannot be a measurement (NaN, negative,
a zero duration, an impossible date: :mod:`~monitor.contract.peers.validate`, the same checks for
every tool) is a :class:`~monitor.errors.UsageError` naming the file and the problem; nothing is
stored then.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.contract.peers import aiperf, guidellm, vllm_bench
from monitor.contract.peers.model import FormatError, PeerRun
from monitor.contract.peers.validate import check_run
from monitor.errors import UsageError

#: Larger files are refused (a detailed GuideLLM report of a long sweep is tens of MB).
MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class PeerFile:
    """A peer file's runs, its tool and its content digest (stored as the run's profile digest)."""

    path: str
    tool: str
    sha256: str
    runs: list[PeerRun]


def _documents(text: str) -> list[Any]:
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as exc:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise FormatError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
        try:
            return [json.loads(line) for line in lines]
        except json.JSONDecodeError:
            raise FormatError(f"not JSON ({exc.msg} at line {exc.lineno})") from None


def _runs(docs: list[Any]) -> tuple[str, list[PeerRun]]:
    """The tool and its runs, each through the shared checks (:func:`check_run`)."""
    tool, runs = _parse(docs)
    for i, run in enumerate(runs):
        try:
            check_run(run)
        except FormatError as exc:
            raise FormatError(f"run {i + 1} of {len(runs)}: {exc}" if len(runs) > 1 else str(exc)) from None
    return tool, runs


def _parse(docs: list[Any]) -> tuple[str, list[PeerRun]]:
    if all(vllm_bench.is_vllm_bench(d) for d in docs):
        return vllm_bench.TOOL, [vllm_bench.parse(d) for d in docs]
    if len(docs) == 1 and guidellm.is_guidellm(docs[0]):
        return guidellm.TOOL, guidellm.parse(docs[0])
    if len(docs) == 1 and aiperf.is_aiperf(docs[0]):
        return aiperf.TOOL, [aiperf.parse(docs[0])]
    raise FormatError(
        "not a known benchmark result (vllm bench serve --save-result JSON, GuideLLM's JSON report, "
        "AIPerf's profile_export_aiperf.json)"
    )


def read_peer_file(path: str) -> PeerFile:
    """The runs in ``path``; UsageError (exit 2) naming the file when it cannot be read as one."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise UsageError(f"{path}: larger than {MAX_BYTES // (1024 * 1024)} MiB")
        raw = p.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    try:
        tool, runs = _runs(_documents(raw.decode("utf-8")))
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except (FormatError, KeyError, TypeError) as exc:
        detail = f"field {exc} is missing" if isinstance(exc, KeyError) else str(exc)
        raise UsageError(f"{path}: {detail}") from None
    return PeerFile(path, tool, hashlib.sha256(raw).hexdigest(), runs)
