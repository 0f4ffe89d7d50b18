"""Traffic profiles: what one request class's traffic looks like, as a versioned YAML file.

A profile (``version: m3mon-profile/v1``) holds the prompt- and output-length distributions,
the arrival process, the reasoning / tool-call / image shares and the prefix-reuse ratio of one
class. It is learned from the store (:mod:`monitor.replay.learn`, ``m3mon profile``) or written
by hand; both are validated here, and every problem names the file, the line and the field.
Lengths are distributions given as quantile knots ``[[q, tokens], ...]`` (q from 0 to 1,
non-decreasing tokens) sampled by inverse CDF with linear interpolation between knots.
:attr:`TrafficProfile.digest` identifies a profile in stored replay runs.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import random
from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from monitor.errors import ConfigError
from monitor.yaml_problems import problem_lines, read_yaml, validation_problems

PROFILE_VERSION: Final = "m3mon-profile/v1"


class Lengths(BaseModel):
    """A token-length distribution as quantile knots: ``[[0, 200], [0.5, 900], [1, 8000]]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    quantiles: list[tuple[float, int]] = Field(min_length=1)

    @model_validator(mode="after")
    def _knots(self) -> Lengths:
        qs = [q for q, _ in self.quantiles]
        if any(not 0.0 <= q <= 1.0 for q in qs) or qs != sorted(qs):
            raise ValueError("quantiles: q values must rise from 0 to 1")
        if len(qs) > 1 and (qs[0] != 0.0 or qs[-1] != 1.0):
            raise ValueError("quantiles: the first knot must be at q 0 and the last at q 1")
        tokens = [t for _, t in self.quantiles]
        if tokens != sorted(tokens) or tokens[0] < 1:
            raise ValueError("quantiles: token counts must be at least 1 and never decrease")
        return self

    def sample(self, rng: random.Random) -> int:
        """One length drawn by inverse CDF (linear between knots)."""
        return self.at(rng.random())

    def at(self, u: float) -> int:
        """The length at quantile ``u`` (0..1)."""
        knots = self.quantiles
        if len(knots) == 1:
            return knots[0][1]
        i = max(1, min(bisect.bisect_right([q for q, _ in knots], u), len(knots) - 1))
        (q0, t0), (q1, t1) = knots[i - 1], knots[i]
        frac = 0.0 if q1 == q0 else (u - q0) / (q1 - q0)
        return max(1, round(t0 + frac * (t1 - t0)))

    @classmethod
    def of(cls, values: list[int], knots: int = 21) -> Lengths:
        """Quantile knots of observed ``values`` (nearest rank at 0, 0.05, ..., 1)."""
        ordered = sorted(max(1, v) for v in values)
        n = len(ordered)
        points = [
            (i / (knots - 1), ordered[min(n - 1, round(i / (knots - 1) * (n - 1)))]) for i in range(knots)
        ]
        return cls(quantiles=points)


class Arrival(BaseModel):
    """When requests arrive: ``poisson`` at ``rate``; ``bursty`` (gamma inter-arrivals with shape
    ``burstiness`` < 1, as ``vllm bench serve --burstiness``); or ``replay`` of ``inter_arrivals``
    (seconds, cycled; scaled to ``rate`` when a rate is given on the command line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    process: Literal["poisson", "bursty", "replay"] = "poisson"
    rate: float = Field(1.0, gt=0.0, le=10000.0, description="requests per second")
    burstiness: float = Field(1.0, gt=0.0, le=100.0)
    inter_arrivals: list[float] = Field(default_factory=list)

    @model_validator(mode="after")
    def _replay(self) -> Arrival:
        if self.process == "replay" and not self.inter_arrivals:
            raise ValueError("inter_arrivals: required (at least one gap in seconds) for process replay")
        if any(g < 0 for g in self.inter_arrivals) or (self.inter_arrivals and sum(self.inter_arrivals) <= 0):
            raise ValueError("inter_arrivals: gaps must be >= 0 seconds and not all 0")
        return self


class TrafficProfile(BaseModel):
    """One class's traffic (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: Literal["m3mon-profile/v1"] = PROFILE_VERSION
    request_class: str = Field(alias="class", min_length=1)
    source: str = "hand-written"
    prompt_tokens: Lengths
    output_tokens: Lengths
    arrival: Arrival = Field(default_factory=Arrival)
    reasoning_share: float = Field(0.0, ge=0.0, le=1.0)
    tool_call_share: float = Field(0.0, ge=0.0, le=1.0)
    image_share: float = Field(0.0, ge=0.0, le=1.0)
    prefix_reuse: float = Field(
        0.0, ge=0.0, le=0.95, description="share of each prompt that is a shared prefix"
    )
    tool_rounds: int = Field(1, ge=1, le=10)

    @model_validator(mode="after")
    def _shares(self) -> TrafficProfile:
        if self.tool_call_share + self.image_share > 1.0 + 1e-9:
            raise ValueError("tool_call_share + image_share: a request is at most one of them (sum <= 1)")
        return self

    def to_data(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True)
        data["prompt_tokens"]["quantiles"] = [list(k) for k in data["prompt_tokens"]["quantiles"]]
        data["output_tokens"]["quantiles"] = [list(k) for k in data["output_tokens"]["quantiles"]]
        return data

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON of the profile (what replay results are stored with)."""
        return hashlib.sha256(json.dumps(self.to_data(), sort_keys=True).encode()).hexdigest()

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_data(), sort_keys=False)


def parse_profile(text: str, source: str = "<profile>") -> TrafficProfile:
    """Validate profile YAML; :class:`ConfigError` lists every problem as ``FILE:LINE: field: why``."""
    root, data = read_yaml(text, source)
    if not isinstance(data, dict) or data.get("version") != PROFILE_VERSION:
        got = data.get("version") if isinstance(data, dict) else None
        raise ConfigError([f"{source}: version: expected {PROFILE_VERSION!r}, got {got!r}"])
    try:
        return TrafficProfile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problem_lines(validation_problems(exc), root, source)) from None


def load_profile(path: str | Path) -> TrafficProfile:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{p}: cannot read profile: {exc.strerror or exc}"]) from None
    return parse_profile(text, str(p))
