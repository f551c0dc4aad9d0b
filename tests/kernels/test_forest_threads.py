"""Forests grown by several threads (groups of trees side by side) equal the one-thread
forest, array for array."""
import threading

import numpy as np
import pytest
from _tree_data import forest_grown as _forest
from _tree_data import pen_small_data
from _tree_data import same_arrays as _same

from sparkxml_kernels.forest import forest
from sparkxml_kernels.forest.nodes import concat_forests


@pytest.fixture(scope="module")
def pen_small():
    return pen_small_data()


@pytest.mark.parametrize("threads", [2, 3, 20])  # 20: more threads than the 8 trees
def test_forest_same_whatever_threads(pen_small, threads):
    ref, counts = _forest(pen_small)
    got, got_counts = _forest(pen_small, grow={"n_threads": threads})
    _same(ref, got)
    np.testing.assert_array_equal(counts, got_counts)


@pytest.mark.parametrize("crit,kw", [("squared_error", {"max_depth": 8}),
                                     ("absolute_error", {"max_depth": 6}),
                                     ("entropy", {"random_splits": True}),
                                     ("poisson", {"max_depth": 5})])
def test_forest_same_whatever_threads_other_criteria(pen_small, crit, kw):
    if crit == "poisson":
        X, y, Xb, edges, vals, keys = pen_small
        pen_small = (X, y + 1, Xb, edges, vals, keys)  # poisson needs a positive mean
    ref, _ = _forest(pen_small, crit=crit, **kw)
    _same(ref, _forest(pen_small, crit=crit, grow={"n_threads": 2}, **kw)[0])


def test_balanced_subsample_and_small_messages_same_whatever_threads(pen_small):
    grow = {"balanced_subsample": True}
    ref, _ = _forest(pen_small, n_trees=7, grow=grow)
    _same(ref, _forest(pen_small, n_trees=7, max_message_bytes=200_000,
                       grow=dict(grow, n_threads=3))[0])


def test_several_ranks_ignore_threads(pen_small):
    ref, _ = _forest(pen_small)
    _same(ref, _forest(pen_small, world=2, grow={"n_threads": 2})[0])


def test_groups_run_on_their_own_threads_and_progress_adds_up(pen_small):
    seen, calls = set(), []

    def done(k, total):
        seen.add(threading.get_ident())
        calls.append((k, total))

    _forest(pen_small, n_trees=8, grow={"n_threads": 2, "on_trees_done": done})
    assert len(seen) == 2
    ks = [k for k, _ in calls]
    assert ks == sorted(ks) and ks[-1] == 8 and {t for _, t in calls} == {8}
    timing = forest.grow_forest.last_timing
    assert timing["levels"] > 0 and timing["hist"] > 0


def test_tree_groups_cover_the_trees_in_order():
    for n_trees, threads in [(8, 1), (8, 3), (3, 8), (100, 2), (1, 1)]:
        groups = forest.tree_groups(n_trees, threads)
        assert len(groups) == min(n_trees, threads)
        assert groups[0][0] == 0 and groups[-1][1] == n_trees
        assert all(a[1] == b[0] for a, b in zip(groups, groups[1:]))
        sizes = [b - a for a, b in groups]
        assert max(sizes) - min(sizes) <= 1


def test_concat_forests_shifts_only_the_offsets(pen_small):
    ref, _ = _forest(pen_small, n_trees=4)
    off = ref["tree_offsets"]

    def part(t0, t1):
        out = {k: v[off[t0]:off[t1]] for k, v in ref.items() if k != "tree_offsets"}
        out["tree_offsets"] = off[t0:t1 + 1] - off[t0]
        return out

    _same(ref, concat_forests([part(0, 1), part(1, 3), part(3, 4)]))
