"""Traffic profiles: validation errors naming file, line and field; sampling; arrivals; learning
from histograms — each against hand-computed expectations."""

from __future__ import annotations

import itertools
import random
import statistics

import pytest

from monitor.errors import ConfigError
from monitor.replay.arrivals import schedule
from monitor.replay.learn import dispersion, histogram_lengths
from monitor.replay.profile import Arrival, Lengths, parse_profile

GOOD = """\
version: m3mon-profile/v1
class: interactive-32k
prompt_tokens: {quantiles: [[0, 100], [0.5, 300], [1, 1100]]}
output_tokens: {quantiles: [[0, 50]]}
arrival: {process: bursty, rate: 4, burstiness: 0.25}
tool_call_share: 0.2
"""


def test_a_valid_profile_round_trips_with_a_stable_digest() -> None:
    p = parse_profile(GOOD, "p.yaml")
    again = parse_profile(p.to_yaml(), "again.yaml")
    assert again == p and again.digest == p.digest
    changed = parse_profile(GOOD.replace("tool_call_share: 0.2", "tool_call_share: 0.3"), "q.yaml")
    assert changed.digest != p.digest


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("tool_call_share: 0.2", "tool_call_share: 2"), "p.yaml:6: tool_call_share: input should be less than or equal to 1"),
        (("arrival: {", "arival: {"), "p.yaml:5: arival: unknown key"),
        (("[1, 1100]", "[1, 90]"), "p.yaml:3: prompt_tokens: quantiles: token counts must be at least 1 and never decrease"),
        (("process: bursty", "process: steady"), "p.yaml:5: arrival.process: expected 'poisson', 'bursty' or 'replay'"),
        (("version: m3mon-profile/v1", "version: 2"), "p.yaml: version: expected 'm3mon-profile/v1', got 2"),
    ],
)  # fmt: skip
def test_errors_name_file_line_and_field(edit: tuple[str, str], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_profile(GOOD.replace(*edit), "p.yaml")
    assert any(line.startswith(expected) for line in info.value.problems), info.value.problems


def test_lengths_are_sampled_by_inverse_cdf_between_knots() -> None:
    lengths = Lengths(quantiles=[(0.0, 100), (0.5, 300), (1.0, 1100)])
    assert [lengths.at(u) for u in (0.0, 0.25, 0.5, 0.75, 1.0)] == [100, 200, 300, 700, 1100]
    draws = [lengths.sample(random.Random(seed)) for seed in range(2000)]
    assert statistics.median(draws) == pytest.approx(300, rel=0.05)


def test_arrival_processes_have_the_documented_mean_and_dispersion() -> None:
    rng = random.Random(3)
    poisson = schedule(Arrival(rate=50.0), rng, 200.0)
    gaps = [b - a for a, b in itertools.pairwise(poisson)]
    assert statistics.mean(gaps) == pytest.approx(1 / 50, rel=0.03)
    assert statistics.pstdev(gaps) / statistics.mean(gaps) == pytest.approx(
        1.0, rel=0.05
    )  # exponential: CV 1
    bursty = schedule(Arrival(process="bursty", rate=50.0, burstiness=0.25), rng, 200.0)
    bgaps = [b - a for a, b in itertools.pairwise(bursty)]
    assert statistics.mean(bgaps) == pytest.approx(1 / 50, rel=0.05)
    # gamma with shape k: CV^2 = 1 / k = 4
    assert (statistics.pstdev(bgaps) / statistics.mean(bgaps)) ** 2 == pytest.approx(4.0, rel=0.15)
    replayed = schedule(Arrival(process="replay", inter_arrivals=[0.1, 0.3]), rng, 1.0)
    assert replayed == pytest.approx([0.1, 0.4, 0.5, 0.8, 0.9])
    scaled = schedule(Arrival(process="replay", inter_arrivals=[0.1, 0.3]), rng, 1.0, rate=10.0)
    assert scaled == pytest.approx([0.05, 0.2, 0.25, 0.4, 0.45, 0.6, 0.65, 0.8, 0.85])  # mean gap 0.1


def test_histogram_knots_spread_each_bucket_uniformly() -> None:
    # 12 prompts: 4 in (2, 5], 6 in (5, 10], 2 above 10 (the +Inf bucket, capped at 20)
    h = {"edges": [1, 2, 5, 10, "+Inf"], "counts": [0, 0, 4, 10, 12]}
    lengths = histogram_lengths(h, cap=20)
    assert lengths is not None
    assert lengths.at(0.0) == 2 and lengths.at(4 / 12) == 5
    assert lengths.at(7 / 12) == round(5 + 0.5 * 5)  # halfway through (5, 10]
    assert lengths.at(11 / 12) == 15 and lengths.at(1.0) == 20
    assert histogram_lengths({"edges": [1, "+Inf"], "counts": [0, 0]}) is None


def test_dispersion_is_one_for_steady_poisson_like_counts_and_ignores_trends() -> None:
    # counts alternating 8, 12: mean 10, squared differences 16 -> 16 / (2 * 10) = 0.8
    assert dispersion([8, 12, 8, 12]) == pytest.approx(16 / 20)
    # a linear ramp of +1 per interval: differences 1 -> 1 / (2 * mean) ~ 0 whatever the trend
    assert dispersion([10, 11, 12, 13, 14]) == pytest.approx(1 / (2 * 12))
    assert dispersion([5, 5]) is None
