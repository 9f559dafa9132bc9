import math

import numpy as np
import pytest

from moments.montecarlo import Estimate, NonFinite, estimate, streaming_estimate, z_critical


def test_interval_covers_the_mean_and_bonferroni_widens():
    rng = np.random.default_rng(0)
    est = estimate(rng.normal(3.0, 2.0, 100_000))
    lo, hi = est.interval(0.999)
    assert lo < 3.0 < hi
    assert z_critical(0.999, 10) > z_critical(0.999, 1)
    assert not est.agrees(3.5)


def test_streaming_matches_one_shot():
    rng = np.random.default_rng(1)
    data = rng.normal(1e6, 1.0, (30_000, 2))
    it = iter(np.array_split(data, 3))
    mean, se = streaming_estimate(lambda k: next(it), 30_000, chunk=10_000)
    assert np.allclose(mean, data.mean(0))
    assert np.allclose(se, data.std(0, ddof=1) / np.sqrt(30_000), rtol=1e-6)


def test_a_non_finite_estimate_or_a_nan_value_decides_nothing():
    """Overflowed samples and a NaN formula value raise NonFinite (the tier stops undecided); a
    finite estimate against an infinite value disagrees."""
    with pytest.raises(NonFinite, match="not finite"):
        Estimate(math.inf, 1.0, 10).agrees(1.0)
    with pytest.raises(NonFinite, match="not finite"):
        Estimate(1.0, math.nan, 10).agrees(1.0)
    with pytest.raises(NonFinite, match="NaN"):
        Estimate(1.0, 0.1, 10).agrees(math.nan)
    assert Estimate(1.0, 0.1, 10).agrees(math.inf) is False
    assert Estimate(1.0, 0.1, 10).agrees(1.05) is True
