"""PfastreXML over Spark Connect: fit (content row order), transform, save/overwrite/load,
kernel loader, a saved PipelineModel."""
from pyspark.ml import PipelineModel

import sparkxml_kernels
from sparkxml import PfastreXML, PfastreXMLModel
from sparkxml.synthetic import csr_rows, make_multilabel, rows_frame


def test_pfastrexml_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    X, Y = make_multilabel(n_rows=500, n_features=200, n_labels=30, seed=6)
    train = rows_frame(spark, X, Y, 0, 400, 200)
    test = rows_frame(spark, X, Y, 400, 500, 200)
    model = PfastreXML(numTrees=3, numWorkers=2, seed=2).fit(train.repartition(3))
    want = [(list(r[0]), list(r[1]))
            for r in model.transform(test).select("prediction", "scores").collect()]
    assert len(want) == 100 and all(len(p) > 0 for p, _ in want)

    path = str(tmp_path / "m")
    model.write().save(path)
    model.write().overwrite().save(path)
    loaded = PfastreXMLModel.load(path)
    got = [(list(r[0]), list(r[1]))
           for r in loaded.transform(test).select("prediction", "scores").collect()]
    assert got == want

    (xi, xj, xv), _ = csr_rows(X, Y, 400, 500)
    labels, _ = sparkxml_kernels.load_model(path).predictor.predict(xi, xj, xv, 5)
    assert [labels[i, :len(p)].tolist() for i, (p, _) in enumerate(want)] == [p for p, _ in want]

    pipe = PipelineModel(stages=[model.copy().setTailClassifiers(False)])  # PfastXML
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    a = pipe.transform(test).select("prediction").collect()
    assert a == again.transform(test).select("prediction").collect()
    assert [list(r[0]) for r in a] != [p for p, _ in want]
