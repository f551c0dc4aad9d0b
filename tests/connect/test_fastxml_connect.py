"""FastXML over Spark Connect: fit, transform, save/overwrite/load, Pipeline, kernel loader."""
from pyspark.ml import Pipeline, PipelineModel

import sparkxml_kernels
from sparkxml import FastXML, FastXMLModel
from sparkxml.synthetic import csr_rows, make_multilabel, rows_frame


def test_fastxml_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    X, Y = make_multilabel(n_rows=800, n_features=300, n_labels=40, seed=5)
    train = rows_frame(spark, X, Y, 0, 600, 300)
    test = rows_frame(spark, X, Y, 600, 800, 300)
    model = FastXML(numTrees=4, numWorkers=2, seed=1).fit(train)
    want = [(list(r[0]), list(r[1])) for r in model.transform(test).select("prediction", "scores").collect()]
    assert len(want) == 200 and all(len(p) > 0 for p, _ in want)

    path = str(tmp_path / "m")
    model.write().save(path)
    model.write().overwrite().save(path)  # no JVM needed for overwrite
    loaded = FastXMLModel.load(path)
    got = [(list(r[0]), list(r[1])) for r in loaded.transform(test).select("prediction", "scores").collect()]
    assert got == want

    (xi, xj, xv), _ = csr_rows(X, Y, 600, 800)
    labels, _ = sparkxml_kernels.load_model(path).predictor.predict(xi, xj, xv, 5)
    assert [labels[i, :len(p)].tolist() for i, (p, _) in enumerate(want)] == [p for p, _ in want]

    pipe = Pipeline(stages=[FastXML(numTrees=2, numWorkers=2)]).fit(train)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    a = pipe.transform(test).select("prediction").collect()
    b = again.transform(test).select("prediction").collect()
    assert a == b


def test_fastxml_distributed_over_connect(spark_connect):
    import numpy as np

    from sparkxml_kernels.fastxml.forest import take_trees

    X, Y = make_multilabel(n_rows=600, n_features=300, n_labels=40, seed=5)
    train = rows_frame(spark_connect, X, Y, 0, 600, 300)
    rep = FastXML(numTrees=2, numWorkers=2, seed=1).fit(train)
    dis = FastXML(numTrees=2, numWorkers=2, seed=1, trainingMode="distributed").fit(train)
    info = dis._training_info
    assert info["mode"] == "distributed" and dis.trees == 2
    # the barrier stage ran over Connect: each root was grown data-parallel, and it is the
    # replicated tree's root
    for t, k in enumerate(info["top_nodes_per_tree"]):
        assert k >= 1
        a, b = take_trees(rep._arrays, [t]), take_trees(dis._arrays, [t])
        np.testing.assert_array_equal(a["children"][0], b["children"][0])
        n = a["w_indptr"][1]
        np.testing.assert_array_equal(a["w_value"][:n], b["w_value"][:n])
