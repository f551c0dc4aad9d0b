"""Tree and forest sums that do not depend on the order or the spread of rows: the level
split against exact rational sums, and whole trees/forests bit for bit over random
partitionings and world sizes, with float targets and weights (where plain float64 sums
differ)."""
import threading
from fractions import Fraction

import numpy as np
import pytest

from sparkxml_kernels.collective import InProcessGroup, LocalCollective
from sparkxml_kernels.forest import builder, criteria, exactsum, forest, histogram
from sparkxml_kernels.forest.bins import exact_edges
from sparkxml_kernels.forest.tree import SplitParams


def _run(world, fn):
    """fn(rank, collective) on ``world`` thread ranks; returns rank 0's result."""
    if world == 1:
        return fn(0, LocalCollective())
    group, out = InProcessGroup(world, timeout=60), [None] * world

    def go(r):
        out[r] = fn(r, group.collective(r))

    threads = [threading.Thread(target=go, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out[0]


def _spread(n, world, seed):
    """A random assignment of rows to ranks, each rank's rows in a random order."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), world - 1, replace=False)) if world > 1 else []
    return np.split(order, cuts)


def test_level_sums_equal_exact_rational_sums_in_any_order():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(3000) * np.exp(rng.uniform(-20, 20, 3000))
    plan = exactsum.plan_levels([np.abs(x).max()], [np.abs(x[x != 0]).min()], [False],
                                x.size)
    assert plan.nlev[0] >= 2
    exact = float(sum(Fraction(v) for v in x))
    sums = set()
    for seed in range(5):
        p = np.random.default_rng(seed).permutation(x.size)
        parts = exactsum.split_terms(x[p], 0, plan)
        acc = np.zeros(parts.shape[1])
        for row in parts:  # one term at a time, as the histogram kernel adds them
            acc += row
        sums.add(float(exactsum.collapse(acc[None, :], plan)[0, 0]))
    assert len(sums) == 1
    got = sums.pop()
    assert abs(got - exact) <= 2 * np.spacing(abs(exact)), (got, exact)
    naive = {float(np.cumsum(x[np.random.default_rng(s).permutation(x.size)])[-1])
             for s in range(5)}
    assert len(naive) > 1  # the data would tell plain float sums apart


def test_integer_statistics_stay_plain():
    plan = exactsum.plan_levels([1.0, 300.0], [1.0, 1.0], [True, True], 10_000)
    assert plan.plain and plan.width == 2


@pytest.mark.parametrize("world", [1, 2, 3])
def test_exact_sums_over_ranks(world):
    rng = np.random.default_rng(1)
    v = rng.standard_normal((500, 3)) * [1e-3, 1.0, 1e6]
    ref = exactsum.exact_sums(LocalCollective(), v)
    parts = _spread(len(v), world, 7)
    got = _run(world, lambda r, c: exactsum.exact_sums(c, v[np.sort(parts[r])[::-1]]))
    np.testing.assert_array_equal(got, ref)


def _data(seed, n=700, d=5, classification=False):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, d)), 2)  # ties: a bin per value
    y = (rng.integers(0, 3, n) if classification
         else np.exp(rng.standard_normal(n)) * X[:, 0] + rng.standard_normal(n) * 0.1)
    w = rng.uniform(0.2, 3.0, n)
    edges, vals = exact_edges(X, 65536)
    from sparkxml_kernels import binning
    from sparkxml_kernels.forest.bins import as_float32
    Xb = binning.bin_data(as_float32(X), edges)
    keys = rng.integers(-2 ** 62, 2 ** 62, n)
    return Xb, y.astype(np.float64), w, keys, edges, vals


def _grow(kind, data, world, seed, crit):
    Xb, y, w, keys, edges, vals = data
    c = criteria.criterion_id(crit)
    K = 3 if c <= criteria.ENTROPY else 0
    parts = _spread(len(y), world, seed)

    def fn(r, coll):
        idx = parts[r]
        cls, yy = y[idx].astype(np.int32), y[idx]
        if kind == "tree":
            p = SplitParams(c, n_classes=K, max_depth=12)
            t = builder.grow_tree(Xb[idx], cls, yy, histogram.ylny(yy), w[idx], p, coll, vals,
                                  edges, rand_state=3)
            return None if t is None else t.as_dict()
        p = SplitParams(c, n_classes=K, max_features=2, max_depth=10)
        res, _ = forest.grow_forest(Xb[idx], cls, yy, histogram.ylny(yy), w[idx], keys[idx],
                                    p, 6, 11, True, 1.0, coll, vals, edges)
        return res

    return _run(world, fn)


@pytest.mark.parametrize("kind, crit", [("forest", "squared_error"), ("forest", "gini"),
                                        ("forest", "poisson"), ("tree", "squared_error"),
                                        ("tree", "entropy")])
def test_same_model_for_any_spread_of_rows(kind, crit):
    data = _data(4, classification=crit in ("gini", "entropy"))
    if crit == "poisson":
        data = (data[0], np.abs(data[1]),) + data[2:]
    ref = _grow(kind, data, 1, 0, crit)
    rng = np.random.default_rng(hash(kind + crit) & 0xFFFF)
    for trial in range(3):
        world = int(rng.integers(1, 4))
        got = _grow(kind, data, world, int(rng.integers(1 << 30)), crit)
        assert got.keys() == ref.keys()
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k], err_msg=f"{k} world={world}")
