"""Parabel over Spark Connect: fit, transform, save/load, Pipeline, kernel loader."""
import scipy.sparse as sp
from pyspark.ml import Pipeline, PipelineModel

import sparkxml_kernels
from sparkxml import Parabel, ParabelModel
from sparkxml.synthetic import csr_rows, make_multilabel, rows_frame


def test_parabel_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    X, Y = make_multilabel(n_rows=600, n_features=300, n_labels=40, seed=5)
    train = rows_frame(spark, X, Y, 0, 500, 300)
    test = rows_frame(spark, X, Y, 500, 600, 300)
    model = Parabel(maxLeafLabels=8, numWorkers=2, seed=1).fit(train)
    want = [(list(r[0]), list(r[1]))
            for r in model.transform(test).select("prediction", "scores").collect()]
    assert len(want) == 100 and all(len(p) > 0 for p, _ in want)

    path = str(tmp_path / "m")
    model.write().save(path)
    loaded = ParabelModel.load(path)
    got = [(list(r[0]), list(r[1]))
           for r in loaded.transform(test).select("prediction", "scores").collect()]
    assert got == want
    (xi, xj, xv), _ = csr_rows(X, Y, 500, 600)
    labels, scores = sparkxml_kernels.load_model(path).predict_topk(
        sp.csr_matrix((xv, xj, xi), shape=(100, 300)), 5)
    assert list(zip(labels, scores)) == want

    pipe = Pipeline(stages=[Parabel(numTrees=2, maxLeafLabels=8, numWorkers=2)]).fit(train)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    a = pipe.transform(test).select("prediction").collect()
    assert a == PipelineModel.load(ppath).transform(test).select("prediction").collect()


def test_levelwise_split_nodes_over_connect(spark_connect, monkeypatch):
    """The split stage (a barrier stage whose tasks hold row blocks) runs over Connect and
    gives the one-task forest."""
    import numpy as np

    from sparkxml_kernels.labeltree import forest as kforest

    X, Y = make_multilabel(n_rows=240, n_features=120, n_labels=24, seed=7)
    frame = rows_frame(spark_connect, X, Y, 0, 240, 120)
    monkeypatch.setitem(kforest.DEFAULTS, "split_rows", int(Y[0][240]) // 3)
    kw = dict(maxLeafLabels=6, numTrees=2, seed=11)
    two = Parabel(trainingMode="distributed", numWorkers=2, **kw).fit(frame)
    one = Parabel(trainingMode="distributed", numWorkers=1, **kw).fit(frame)
    assert two._training_info["split_stage"]["nodes"] >= 2
    for k, v in one._arrays.items():
        np.testing.assert_array_equal(two._arrays[k], v, err_msg=k)
