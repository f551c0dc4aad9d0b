"""FMRanker over Spark Connect: the checks job, the barrier stage, transform, the
recommendations, the ranking metrics, save/load, Pipeline persistence and the JVM-free
loader."""
import numpy as np
from pyspark.ml import PipelineModel

import sparkxml_kernels
from sparkxml import FMRanker
from sparkxml.evaluation import recommendation_metrics
from sparkxml.fm.ranker import FMRankerModel


def test_fm_ranker_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    rows = [(u, i) for u in range(30) for i in range(12) if (u + i) % 3 == 0]
    df = spark.createDataFrame(rows, "user int, item int")
    model = FMRanker(factorSize=3, maxIter=20, stepSize=0.05, miniBatchFraction=0.5, seed=2,
                     numWorkers=2).fit(df)
    assert [i["world_size"] for i in model.summary.workerInfo] == [2, 2]
    recs = model.recommendForAllUsers(4)
    assert recs.count() == 30
    top = recs.where("user = 1").first().recommendations
    assert {r.item % 3 for r in top} == {2}  # user 1's positives: items 2, 5, 8, 11
    sub = model.recommendForUserSubset(df.where("user < 3"), 2)
    assert sorted(r.user for r in sub.collect()) == [0, 1, 2]
    m = recommendation_metrics(recs, df, k=4)
    assert m["recallAtK"] > 0.9, m
    scores = [r.prediction for r in model.transform(df).collect()]
    path = str(tmp_path / "ranker")
    model.write().save(path)
    model.write().overwrite().save(path)
    loaded = FMRankerModel.load(path)
    assert [r.prediction for r in loaded.transform(df).collect()] == scores
    served = sparkxml_kernels.load_model(path)
    u, i = np.array(rows).T
    np.testing.assert_array_equal(served.predict(u, i), scores)
    ppath = str(tmp_path / "pipe")
    PipelineModel(stages=[model]).write().save(ppath)
    again = PipelineModel.load(ppath)
    assert [r.prediction for r in again.transform(df).collect()] == scores
