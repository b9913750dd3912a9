"""The harness's arithmetic: percentiles, latencies, rates and ratios."""

from __future__ import annotations

import math
import random

import numpy
import pytest

from bench.stats import latency, percentile, rate, ratio


def test_percentiles_of_one_to_a_hundred_interpolate_between_ranks() -> None:
    samples = list(range(1, 101))
    assert percentile(samples, 50) == pytest.approx(50.5)
    assert percentile(samples, 95) == pytest.approx(95.05)
    assert percentile(samples, 99) == pytest.approx(99.01)
    assert percentile(samples, 0) == 1
    assert percentile(samples, 100) == 100


def test_a_percentile_does_not_depend_on_the_order_of_the_samples() -> None:
    samples = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(samples, 50) == 3.0
    assert percentile(samples, 25) == 2.0
    assert percentile(samples, 90) == pytest.approx(4.6)


def test_one_sample_is_every_percentile() -> None:
    assert [percentile([7.5], p) for p in (0, 50, 99, 100)] == [7.5, 7.5, 7.5, 7.5]


def test_two_samples_interpolate_linearly() -> None:
    assert percentile([10, 20], 50) == 15
    assert percentile([10, 20], 99) == pytest.approx(19.9)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentiles_agree_with_numpys_default_method(seed: int) -> None:
    rng = random.Random(seed)
    samples = [rng.lognormvariate(0, 1) for _ in range(rng.randint(1, 500))]
    for p in (1, 50, 95, 99, 99.9):
        assert percentile(samples, p) == pytest.approx(float(numpy.percentile(samples, p)))


def test_no_samples_is_an_error_not_a_zero() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)


@pytest.mark.parametrize("p", [-1, 100.5])
def test_a_percentile_outside_0_to_100_is_an_error(p: float) -> None:
    with pytest.raises(ValueError, match="0 to 100"):
        percentile([1.0], p)


def test_a_nan_sample_is_an_error() -> None:
    with pytest.raises(ValueError, match="NaN"):
        percentile([1.0, math.nan], 50)


def test_latency_turns_seconds_into_milliseconds() -> None:
    measured = latency([0.001 * n for n in range(1, 101)])
    assert measured is not None
    assert measured.count == 100
    assert measured.p50 == pytest.approx(50.5)
    assert measured.p99 == pytest.approx(99.01)
    assert measured.max == pytest.approx(100.0)
    assert measured.as_dict()["p95"] == pytest.approx(95.05)


def test_no_calls_have_no_latency() -> None:
    assert latency([]) is None


def test_a_rate_is_items_per_second_and_needs_time_to_pass() -> None:
    assert rate(500, 2.0) == 250.0
    with pytest.raises(ValueError, match="positive duration"):
        rate(500, 0)


def test_a_ratio_names_its_numerator_and_denominator() -> None:
    r = ratio("items/s with 8 workers over 1", ("8 workers", 4000.0), ("1 worker", 1000.0))
    assert (r.numerator, r.denominator, r.value, r.note) == ("8 workers", "1 worker", 4.0, "")
    assert r.shown() == "4.00x"
    assert r.as_dict() == {"name": "items/s with 8 workers over 1", "numerator": "8 workers",
                           "denominator": "1 worker", "value": 4.0, "note": ""}


def test_a_zero_denominator_gives_no_value_and_says_which_arm_was_zero() -> None:
    r = ratio("items/s with 8 workers over 1", ("8 workers", 4000.0), ("1 worker", 0.0))
    assert r.value is None
    assert r.note == "1 worker is 0"
    assert r.shown() == "n/a (1 worker is 0)"


def test_a_missing_measurement_gives_no_value_and_says_which() -> None:
    r = ratio("claim p99 while a purge runs over without", ("while a purge runs", None), ("without", 2.0))
    assert r.value is None
    assert r.note == "while a purge runs was not measured"
