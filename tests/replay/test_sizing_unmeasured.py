"""An endpoint whose ``/tokenize`` cannot measure a chat (SGLang's takes ``prompt`` only) keeps
the calibrated prompt size, is asked once, and the run says its sizes are estimates (issue 26,
finding 3: "fails loudly where it cannot"). The stub server of tests/probes/test_tokens.py:
one token per word, 12-word filler sentences."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from monitor.model import load_model
from monitor.probes import tokens
from monitor.probes.target import Target
from monitor.replay.profile import TrafficProfile
from monitor.replay.requests import TAG_ALLOWANCE, Planned, Sender
from tests.probes.conftest import write_config
from tests.probes.test_tokens import Stub, serving


def test_sizes_stay_calibrated_and_the_endpoint_is_asked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokens, "_CACHE", {})  # a calibration of another stub on this port must not be reused
    stub = Stub()
    with serving(stub) as endpoint:
        model = load_model(write_config(tmp_path / "m3mon.yaml", endpoint.base_url))
        profile = TrafficProfile.model_validate({"class": model.classes[0].name,
                                                 "prompt_tokens": {"quantiles": [[0, 300]]},
                                                 "output_tokens": {"quantiles": [[0, 10]]}})  # fmt: skip

        async def run() -> tuple[tokens.Calibration, Sender, list[str], int]:
            async with httpx.AsyncClient() as client:
                cal = await tokens.calibrate(client, endpoint)
                sender = Sender(Target(endpoint, model.classes[0]), profile, 10.0, 1, cal)
                first = await sender.prepare(client, Planned(0, 0.0, "text", 300, 10))
                asked = stub.hits["/tokenize"]
                await sender.prepare(client, Planned(1, 0.0, "text", 300, 10))
                return cal, sender, str(first[0]["content"]).split(), stub.hits["/tokenize"] - asked

        cal, sender, words, again = asyncio.run(run())
    assert (cal.source, cal.per_sentence, cal.overhead) == ("tokenize", 12.0, tokens.TEMPLATE_ALLOWANCE)
    assert sender.unmeasured and again == 0  # refused once: never asked again in the run
    # calibrated: floor((300 x 0.96 - 64 - 16) / 12) = 17 sentences, one held in reserve: 16, plus the tag
    assert TAG_ALLOWANCE == 16 and len(words) == 2 + 16 * 12
