"""LambdaMART over Spark Connect: fit (repartition by query, barrier stage), transform,
RankingEvaluator, read_svmlight, early stopping, save/overwrite/load, Pipeline, kernel
loader."""

import numpy as np
import pytest
from _data import data_path
from pyspark.ml import Pipeline, PipelineModel

import sparkxml_kernels
from sparkxml import LambdaMART, LambdaMARTModel, RankingEvaluator
from sparkxml.datasets import read_svmlight
from sparkxml_kernels.formats import read_svmlight as read_svmlight_arrays


def rank(name):
    """A file of LightGBM's lambdarank example (skips where the data is missing)."""
    return data_path("lightgbm_rank", name)


def test_lambdamart_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    test_path = rank("rank.test")
    query_path = rank("rank.test.query")
    # the small test file as training data (768 rows, 50 queries), scattered over partitions
    df = read_svmlight(spark, test_path, query_path, num_features=300).repartition(3)
    df = df.withColumn("val", (df.qid % 5) == 0)
    model = LambdaMART(maxIter=12, maxDepth=4, numWorkers=2, validationIndicatorCol="val",
                       earlyStoppingRounds=4).fit(df)
    assert model.summary.metricName == "ndcg@10"
    assert len(model.summary.validationHistory) == model.summary.roundsRun
    out = model.transform(df)
    ndcg = RankingEvaluator(k=10).evaluate(out.where("not val"))
    assert 0.5 < ndcg <= 1.0
    want = [r["prediction"] for r in out.select("prediction").collect()]

    path = str(tmp_path / "m")
    model.write().save(path)
    model.write().overwrite().save(path)  # no JVM needed for overwrite
    loaded = LambdaMARTModel.load(path)
    assert [r["prediction"] for r in loaded.transform(df).select("prediction").collect()] == want

    y, _, ip, ix, dv, d = read_svmlight_arrays(test_path, query_path, 300)
    served = sparkxml_kernels.load_model(path)
    ref = served.predict((ip, ix, dv, d))
    got = np.array(sorted(want))
    np.testing.assert_allclose(got, np.sort(ref), rtol=1e-12)

    pipe = Pipeline(stages=[LambdaMART(objective="pairwise", maxIter=3, numWorkers=2)]).fit(df)
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    a = pipe.transform(df).select("prediction").collect()
    b = again.transform(df).select("prediction").collect()
    assert a == b
    with pytest.raises(ValueError, match="relevance grades must be integers"):
        LambdaMART(maxIter=2, numWorkers=1).fit(df.withColumn("label", df.label - 0.5))
