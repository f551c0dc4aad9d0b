"""Level-wise distributed training of Parabel and Bonsai: the replicated mode's model bit for
bit, whatever numWorkers and the partitioning; no task holds all the rows."""
import logging

import numpy as np
import pytest

from sparkxml import Bonsai, Parabel
from sparkxml.synthetic import make_multilabel, rows_frame


@pytest.fixture(scope="module")
def tiny(spark):
    X, Y = make_multilabel(n_rows=240, n_features=120, n_labels=24, seed=7)
    return rows_frame(spark, X, Y, 0, 240, 120).repartition(3).cache()


def _same(a, b):
    assert set(a._arrays) == set(b._arrays)
    for k in a._arrays:
        np.testing.assert_array_equal(a._arrays[k], b._arrays[k], err_msg=k)


def test_parabel_levelwise_is_the_replicated_model(tiny, caplog):
    kw = dict(maxLeafLabels=3, numTrees=2, seed=11)
    replicated = Parabel(numWorkers=1, **kw).fit(tiny)
    with caplog.at_level(logging.INFO, logger="sparkxml"):
        one = Parabel(trainingMode="distributed", numWorkers=1, verbose=1, **kw).fit(
            tiny.repartition(1))
    two = Parabel(trainingMode="distributed", numWorkers=2, **kw).fit(tiny)
    _same(replicated, one)
    _same(replicated, two)
    info = two._training_info
    assert info["mode"] == "distributed" and two.summary.trainingMode == "distributed"
    levels = info["levels"]
    assert len(levels) >= 3  # 24 labels, leaves of <= 3: root, 2, 4, 8 nodes per tree
    assert levels[0]["nodes"] == 2  # the two roots
    # below the root level the nodes' rows are split between the two tasks
    deep = levels[-1]["tasks"]
    assert len(deep) == 2 and max(t["rows"] for t in deep) < 240
    assert any("level" in r.getMessage() for r in caplog.records)


def test_bonsai_levelwise_is_the_replicated_model(tiny):
    kw = dict(branchFactor=3, maxDepth=2, maxLeafLabels=2, numTrees=2, seed=2,
              loss="logistic")
    replicated = Bonsai(numWorkers=2, **kw).fit(tiny)
    two = Bonsai(trainingMode="distributed", numWorkers=2, **kw).fit(tiny)
    _same(replicated, two)
