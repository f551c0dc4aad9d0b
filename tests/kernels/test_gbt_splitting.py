"""Split finding against its naive twin, and XGBoost's gain semantics."""
import numpy as np
import pytest

from sparkxml_kernels.gbt.histogram import build_histogram, n_hist_slots
from sparkxml_kernels.gbt.splitting import (
    SplitParams,
    find_best_splits,
    find_best_splits_naive,
    leaf_weight,
)


def _hists(seed, m=6, d=5, nb=(9, 2, 30, 1, 5), n=400, missing=0.1):
    rng = np.random.default_rng(seed)
    nb = np.array(nb, np.int32)
    S = n_hist_slots(nb)
    hists = np.zeros((m, d, S, 2))
    sums = np.zeros((m, 2))
    for j in range(m):
        binned = np.column_stack([rng.integers(0, b, n) for b in nb]).astype(np.uint8)
        binned[rng.random((n, d)) < missing * (j % 2)] = 255  # half the nodes have missing
        g = rng.standard_normal(n) + binned[:, 0] * 0.3 * (j - 2)
        h = rng.uniform(0.05, 1.0, n)
        build_histogram(binned, np.arange(n, dtype=np.int32), g, h, hists[j])
        sums[j] = g.sum(), h.sum()
    edges = [np.arange(b - 1, dtype=float) + 0.5 for b in nb]
    return hists, sums, nb, edges


@pytest.mark.parametrize("params", [
    SplitParams(),
    SplitParams(reg_lambda=0.0, min_child_weight=0.0),
    SplitParams(reg_lambda=3.0, reg_alpha=2.0, min_split_loss=0.5, min_child_weight=20.0),
    SplitParams(min_child_weight=150.0),
])
def test_find_best_splits_matches_naive(params):
    for seed in range(4):
        hists, sums, nb, edges = _hists(seed)
        mask = np.ones(len(nb), np.uint8)
        if seed == 3:
            mask[0] = 0
        a = find_best_splits(hists, sums, nb, mask, params, edges)
        b = find_best_splits_naive(hists, sums, nb, mask, params, edges)
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.bin, b.bin)
        np.testing.assert_array_equal(a.default_left, b.default_left)
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_allclose(a.gain, b.gain, rtol=1e-9)
        np.testing.assert_allclose(a.left_sums, b.left_sums, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(a.right_sums, b.right_sums, rtol=1e-9, atol=1e-9)
        if seed == 3:
            assert not (a.feature == 0).any()


def test_gain_formula_and_children_sums():
    # one feature, two bins; left: G=-4,H=2 ; right: G=6,H=3
    hist = np.zeros((1, 1, 3, 2))
    hist[0, 0, 0] = [-4.0, 2.0]
    hist[0, 0, 1] = [6.0, 3.0]
    p = SplitParams(reg_lambda=1.0, reg_alpha=0.5, min_split_loss=0.1, min_child_weight=1.0)
    r = find_best_splits(hist, np.array([[2.0, 5.0]]), np.array([2], np.int32),
                         np.ones(1, np.uint8), p, [np.array([0.25])])

    def soft(g):
        return np.sign(g) * max(abs(g) - 0.5, 0)

    expect = soft(-4) ** 2 / 3 + soft(6) ** 2 / 4 - soft(2) ** 2 / 6 - 0.1
    assert r.feature[0] == 0 and r.bin[0] == 0 and r.threshold[0] == 0.25
    assert r.default_left[0] == 0  # no missing values: default right, as XGBoost
    assert r.gain[0] == pytest.approx(expect)
    np.testing.assert_allclose(r.left_sums[0], [-4, 2])
    np.testing.assert_allclose(r.right_sums[0], [6, 3])
    assert leaf_weight(-4.0, 2.0, p) == pytest.approx(3.5 / 3)
    assert leaf_weight(2.0, 0.5, p) == 0.0  # H < min_child_weight


def test_missing_values_learn_their_direction():
    # missing rows look like the left bin -> default_left
    hist = np.zeros((1, 1, 3, 2))
    hist[0, 0, 0] = [-10.0, 5.0]
    hist[0, 0, 1] = [10.0, 5.0]
    hist[0, 0, 2] = [-10.0, 5.0]  # missing slot
    r = find_best_splits(hist, np.array([[-10.0, 15.0]]), np.array([2], np.int32),
                         np.ones(1, np.uint8), SplitParams(), [np.array([0.0])])
    assert r.default_left[0] == 1 and r.bin[0] == 0
    np.testing.assert_allclose(r.left_sums[0], [-20, 10])
    # "present vs missing": one real bin only, the missing rows differ
    hist = np.zeros((1, 1, 3, 2))
    hist[0, 0, 0] = [-10.0, 5.0]
    hist[0, 0, 2] = [10.0, 5.0]
    r = find_best_splits(hist, np.array([[0.0, 10.0]]), np.array([1], np.int32),
                         np.ones(1, np.uint8), SplitParams(), [np.array([])])
    assert r.feature[0] == 0 and r.bin[0] == 0 and r.default_left[0] == 0
    assert r.threshold[0] == np.inf


def test_no_valid_split():
    hist = np.zeros((1, 2, 3, 2))
    hist[0, :, 0] = [1.0, 0.5]
    hist[0, :, 1] = [-1.0, 0.5]
    r = find_best_splits(hist, np.array([[0.0, 1.0]]), np.array([2, 2], np.int32),
                         np.ones(2, np.uint8), SplitParams(), None)
    assert r.feature[0] == -1 and r.gain[0] == -np.inf


def test_rounding_noise_in_empty_bins_does_not_move_the_threshold():
    # bin 1 and the missing slot hold only subtraction noise: the threshold stays after bin 0
    # and no missing-value direction is learned, whatever the noise
    for noise in (1e-15, 1e-12, -1e-12):
        hist = np.zeros((1, 1, 5, 2))
        hist[0, 0, 0] = [-5.0, 2.0]
        hist[0, 0, 1] = [noise, abs(noise) * 1e-2]
        hist[0, 0, 2] = [5.0, 2.0]
        hist[0, 0, 4] = [noise * 0.1, abs(noise) * 1e-2]
        sums = np.array([hist[0, 0].sum(0)])
        nb, mask = np.array([3], np.int32), np.ones(1, np.uint8)
        for fn in (find_best_splits, find_best_splits_naive):
            r = fn(hist, sums, nb, mask, SplitParams(), empty_hess=1e-11 * 4.0)
            assert r.bin[0] == 0 and r.default_left[0] == 0


def test_near_ties_keep_the_first_candidate():
    # features 0 and 1 separate the same rows; their gains differ by rounding only
    hist = np.zeros((1, 2, 3, 2))
    hist[0, 0, 0] = [-3.0, 2.0]
    hist[0, 0, 1] = [4.0, 2.0]
    hist[0, 1, 0] = [-3.0 * (1 + 1e-15), 2.0]
    hist[0, 1, 1] = [4.0 - 3.0e-15, 2.0]
    for fn in (find_best_splits, find_best_splits_naive):
        r = fn(hist, np.array([[1.0, 4.0]]), np.array([2, 2], np.int32), np.ones(2, np.uint8),
               SplitParams())
        assert r.feature[0] == 0
