"""Host-side sampling: greedy equals argmax, top-p keeps exactly the nucleus, seeds repeat."""

import numpy as np
import pytest

from autosched.engine.sampling import sample


def test_greedy_and_nucleus():
    rng = np.random.default_rng(0)
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    assert sample(logits, 0.0, 1.0, rng) == 0
    # top_p 0.7: 0.5 < 0.7 <= 0.8, so tokens 0 and 1 only, in the ratio 5:3
    draws = [sample(logits, 1.0, 0.7, rng) for _ in range(4000)]
    assert set(draws) == {0, 1}
    assert abs(draws.count(0) / len(draws) - 0.625) < 0.03
    # full nucleus at temperature 1 reproduces the distribution
    draws = np.bincount([sample(logits, 1.0, 1.0, rng) for _ in range(20000)], minlength=4) / 20000
    assert np.allclose(draws, [0.5, 0.3, 0.15, 0.05], atol=0.015)


def test_seeded_runs_repeat_and_bad_input_is_refused():
    logits = np.random.default_rng(1).standard_normal(100)
    a = [sample(logits, 0.8, 0.9, np.random.default_rng(7)) for _ in range(5)]
    b = [sample(logits, 0.8, 0.9, np.random.default_rng(7)) for _ in range(5)]
    assert a == b
    with pytest.raises(ValueError, match="top_p"):
        sample(logits, 1.0, 0.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        sample(np.array([0.0, np.nan]), 1.0, 1.0, np.random.default_rng(0))
