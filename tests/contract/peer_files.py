"""Held peer result files (tests/fixtures/peers) as a test imports them.

The GuideLLM and AIPerf fixtures name the simulator they measured (``http://127.0.0.1:18431``, the
port of the day they were written); a test's simulator listens on a free port, and an import
refuses a run whose target is not the endpoint's (docs/contract.md, *Evidence rules*). A test that
imports such a file as a measurement of *its* simulator writes a copy whose target is that
simulator's address — the one field changed, as if the tool had been pointed there.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.contract.test_peer_formats import PEERS


def retargeted(name: str, base_url: str, folder: Path) -> str:
    """A copy of ``PEERS/name`` in ``folder`` whose target is ``base_url``."""
    doc = json.loads((PEERS / name).read_text())
    if "benchmarks" in doc:  # GuideLLM
        doc["config"]["spec"]["backend"]["target"] = base_url
    else:  # AIPerf
        doc["input_config"]["endpoint"]["urls"] = [base_url]
    out = folder / name
    out.write_text(json.dumps(doc))
    return str(out)
