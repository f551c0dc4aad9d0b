"""Level-wise distributed training (Parabel here; Bonsai's trees and the logistic loss go
through the same code, checked in tests/kernels/test_labeltree_levels.py): the replicated
mode's model bit for bit when no node is split, and the same model whatever numWorkers, the
partitioning and the Arrow batches the tasks' rows come in."""
import logging
import re

import numpy as np
import pytest

from sparkxml import Parabel
from sparkxml.synthetic import make_multilabel, rows_frame


@pytest.fixture(scope="module")
def tiny(spark):
    X, Y = make_multilabel(n_rows=240, n_features=120, n_labels=24, seed=7)
    return rows_frame(spark, X, Y, 0, 240, 120).repartition(3).cache()


@pytest.fixture
def small_batches(spark):
    """Tasks get their rows in many Arrow batches (converted one by one, then ordered)."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key)
    spark.conf.set(key, "16")
    yield
    spark.conf.set(key, old)


def _same(a, b):
    assert set(a._arrays) == set(b._arrays)
    for k in a._arrays:
        np.testing.assert_array_equal(a._arrays[k], b._arrays[k], err_msg=k)


def test_parabel_levelwise_is_the_replicated_model(tiny, caplog, small_batches):
    kw = dict(maxLeafLabels=6, numTrees=2, seed=11)
    # replicated on one task and one partition, level-wise on two tasks and three partitions
    # (tests/kernels/test_labeltree_levels.py covers more task counts without Spark)
    replicated = Parabel(numWorkers=1, **kw).fit(tiny.repartition(1))
    with caplog.at_level(logging.INFO, logger="sparkxml"):
        two = Parabel(trainingMode="distributed", numWorkers=2, verbose=1, **kw).fit(tiny)
    _same(replicated, two)
    info = two._training_info
    assert info["mode"] == "distributed" and two.summary.trainingMode == "distributed"
    stage = info["subtree_stage"]
    # 24 labels, leaves of <= 6: 7 nodes a tree; at 240 rows no node is split, so each
    # subtree is a tree, given to a task of its own
    assert stage["subtrees"] == 2 and stage["nodes"] == 14
    assert len(stage["tasks"]) == 2 and sum(t["nodes"] for t in stage["tasks"]) == 14
    # each task loaded its kernels before its memory figures began
    assert all(t["kernel_load_bytes"] >= 0 and t["kernel_load_seconds"] >= 0
               for t in stage["tasks"] + info["representation_tasks"]), stage["tasks"]
    lines = [r.getMessage() for r in caplog.records]
    assert any("subtree nodes 14/14" in x for x in lines), lines
    # each task's line as it finishes its subtree, sent to the driver as it comes
    tasks = {m.group(1) for m in (re.match(r"Parabel task (\d+) subtree 1/1: nodes=7", x)
                                  for x in lines) if m}
    assert len(tasks) == 2, lines


def test_split_nodes_train_on_tasks_holding_blocks_of_rows(spark, monkeypatch, small_batches):
    from sparkxml_kernels.labeltree import forest as kforest

    X, Y = make_multilabel(n_rows=240, n_features=120, n_labels=24, seed=7)
    pairs = int(Y[0][240])
    labelled = int(np.count_nonzero(np.diff(Y[0][:241])))
    frame = rows_frame(spark, X, Y, 0, 240, 120)
    kw = dict(maxLeafLabels=6, numTrees=2, seed=11)
    # the roots and the nodes below them carry more than a third of the (row, label) pairs
    monkeypatch.setitem(kforest.DEFAULTS, "split_rows", pairs // 3)
    replicated = Parabel(numWorkers=1, **kw).fit(frame.repartition(1))
    one = Parabel(trainingMode="distributed", numWorkers=1, **kw).fit(frame.repartition(1))
    two = Parabel(trainingMode="distributed", numWorkers=2, **kw).fit(frame.repartition(4))
    _same(one, two)  # the split nodes' classifiers do not depend on the tasks
    # only the level-wise mode splits nodes: the same trees, other weights
    assert not np.array_equal(replicated._arrays["we_value"], two._arrays["we_value"])
    for k in ("child_indptr", "child_index", "leaf_indptr", "leaf_label"):
        np.testing.assert_array_equal(replicated._arrays[k], two._arrays[k], err_msg=k)
    info = two._training_info
    stage = info["split_stage"]
    assert stage["nodes"] >= 2  # the two roots at least
    below = info["subtree_stage"]
    assert stage["nodes"] + below["nodes"] == 14
    rows = [t["rows"] for t in stage["tasks"]]
    # every labelled row once, divided between the two tasks
    assert len(rows) == 2 and sum(rows) == labelled and max(rows) < labelled
    # the subtrees below the split nodes: more tasks than workers, none with every row
    assert below["subtrees"] > 2 and len(below["tasks"]) > 2
    assert all(0 < t["rows"] < labelled for t in below["tasks"])
