"""The distributed permutation importance's pieces: per-block score terms add up to
scikit-learn's scorers, and a block's permutations follow (seed, block, feature, repeat)."""

import numpy as np
import pytest

from sparkxml_kernels.forest import importance


@pytest.mark.parametrize("metric", importance.METRICS)
def test_terms_summed_over_blocks_give_the_scorer(metric):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 500).astype(float)
    pred = np.where(rng.random(500) < 0.7, y, rng.integers(0, 3, 500))
    w = rng.uniform(0.5, 2.0, 500)
    cuts = [0, 120, 121, 400, 500]
    terms = sum(importance.score_terms(metric, y[a:b], pred[a:b], w[a:b])
                for a, b in zip(cuts[:-1], cuts[1:]))
    assert importance.score_from_terms(metric, terms) == pytest.approx(
        importance.score(metric, y, pred, w), rel=1e-12, abs=1e-12)


def test_block_terms_permute_one_feature_at_a_time():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = 3 * X[:, 0] + 0.1 * X[:, 1]
    seen = []

    def predict(A):
        seen.append(A.copy())
        return 3 * A[:, 0] + 0.1 * A[:, 1]

    t = importance.block_importance_terms(predict, X, y, "r2", 2, 7, 5)
    assert t.shape == (1 + 3 * 2, 4)
    scores = [importance.score_from_terms("r2", r) for r in t]
    assert scores[0] == pytest.approx(1.0)
    assert scores[1] < 0 and scores[2] < 0          # feature 0 permuted: the fit is lost
    assert scores[5] == scores[6] == pytest.approx(1.0)  # feature 2 is unused
    # repeat k of feature j: the original column under default_rng([seed, block, j, k])
    perm = np.random.default_rng([7, 5, 1, 1]).permutation(300)
    np.testing.assert_array_equal(seen[4][:, 1], X[perm, 1])
    np.testing.assert_array_equal(seen[4][:, [0, 2]], X[:, [0, 2]])
