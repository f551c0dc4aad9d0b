"""FMRanker (implicit feedback, BPR) on local Spark: the same model for 1 and 2 workers and any
partitioning, ranking quality on planted data, recommendations in ALS's shape, persistence,
Pipelines, the JVM-free loader and input errors."""
import logging

import numpy as np
import pytest
from pyspark.ml import PipelineModel
from pyspark.ml.linalg import Vectors
from pyspark.sql import functions as F

import sparkxml_kernels
from sparkxml import FMRanker
from sparkxml.evaluation import recommendation_metrics
from sparkxml.fm.ranker import FMRankerModel

N_USERS, N_ITEMS = 60, 40


def planted_implicit(n_users=N_USERS, n_items=N_ITEMS, train=8, test=2, seed=0):
    """Rank-2 planted taste: each user's (train + test) best items, split at random; ids
    offset so that they are not positions."""
    rng = np.random.default_rng(seed)
    P, Q = rng.normal(size=(n_users, 2)), rng.normal(size=(n_items, 2))
    top = np.argsort(-(P @ Q.T), axis=1)[:, :train + test]
    tr, te = [], []
    for u in range(n_users):
        best = rng.permutation(top[u])
        tr += [(u * 3 + 7, int(i) + 1000) for i in best[:train]]
        te += [(u * 3 + 7, int(i) + 1000) for i in best[train:]]
    return tr, te


@pytest.fixture(scope="module")
def data(spark):
    tr, te = planted_implicit()
    train = spark.createDataFrame(tr, "user int, item long")
    test = spark.createDataFrame(te, "user int, item long")
    return train, test


EST = dict(factorSize=4, maxIter=15, stepSize=0.1, miniBatchFraction=0.5, numNegatives=2,
           seed=5)


def test_ranker_same_model_for_1_and_2_workers_and_quality(data, tmp_path):
    train, test = data
    m1 = FMRanker(numWorkers=1, **EST).fit(train)
    m2 = FMRanker(numWorkers=2, **EST).fit(train.repartition(3))
    a, b = m1.predictor.to_arrays(), m2.predictor.to_arrays()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert [i["world_size"] for i in m2.summary.workerInfo] == [2, 2]
    loss = m1.summary.history["loss"]
    assert len(loss) == 15 and loss[-1] < 0.5 * loss[0]

    recs = m1.recommendForAllUsers(10)
    assert recs.columns == ["user", "recommendations"]
    assert recs.schema["recommendations"].dataType.simpleString() == \
        "array<struct<item:bigint,rating:float>>"
    got = recommendation_metrics(recs, test, k=10)
    # random items: recall@10 = 10 / 40, NDCG@10 about 0.14; the training items (not
    # excluded, as ALS) fill part of the top 10
    assert got["recallAtK"] > 0.6 and got["ndcgAtK"] > 0.25, got
    # the scores of transform are the recommendation ratings (float32 of the same double)
    rows = recs.where("user = 7").first().recommendations
    pairs = test.sparkSession.createDataFrame([(7, r.item) for r in rows], "user int, item long")
    scores = [r.prediction for r in m1.transform(pairs).collect()]
    np.testing.assert_array_equal(np.float32(scores), np.float32([r.rating for r in rows]))
    assert scores == sorted(scores, reverse=True)

    # subset: distinct known users only (unknown and null users are left out)
    sub = m1.recommendForUserSubset(
        test.sparkSession.createDataFrame([(7,), (7,), (10,), (99999,), (None,)], "user int"), 3)
    assert sorted(r.user for r in sub.collect()) == [7, 10]
    assert len(sub.first().recommendations) == 3

    # cold start: NaN or dropped
    cold = test.sparkSession.createDataFrame([(7, 1000), (99999, 1000), (7, 5)],
                                             "user int, item int")
    s = [r.prediction for r in m1.transform(cold).collect()]
    assert np.isfinite(s[0]) and np.isnan(s[1]) and np.isnan(s[2])
    assert m1.copy().setColdStartStrategy("drop").transform(cold).count() == 1

    # save / load, the JVM-free loader, Pipelines
    path = str(tmp_path / "ranker")
    m1.write().save(path)
    loaded = FMRankerModel.load(path)
    assert loaded.transform(cold).collect()[0].prediction == s[0]
    assert loaded.summary.history["loss"] == loss
    served = sparkxml_kernels.load_model(path)
    np.testing.assert_array_equal(served.predict([7, 99999], [1000, 1000])[:1], s[:1])
    ids, sc = served.recommend([7], 10)
    assert ids[0].tolist() == [r.item for r in rows]
    np.testing.assert_array_equal(np.float32(sc[0]), np.float32([r.rating for r in rows]))
    pipe = PipelineModel(stages=[m1])
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    assert again.transform(cold).collect()[0].prediction == s[0]


def test_ranker_with_context_features(spark):
    rows = [(u, i, Vectors.sparse(3, {u % 3: 1.0})) for u in range(15) for i in range(6)
            if (u + i) % 2 == 0]
    df = spark.createDataFrame(rows, ["user", "item", "ctx"])
    est = FMRanker(featuresCol="ctx", factorSize=3, maxIter=3, miniBatchFraction=0.5, seed=1)
    model = est.fit(df)
    assert model.predictor.feature_factors.shape == (3, 3)
    out = model.transform(df).select("prediction").collect()
    assert all(np.isfinite(r.prediction) for r in out)
    with pytest.raises(ValueError, match="featuresCol"):
        model.copy({model.featuresCol: "nope"}).transform(df)
    with pytest.raises(ValueError, match="set featuresCol"):
        FMRankerModel(model.predictor).transform(df.drop("ctx"))


def test_ranker_bad_input(spark, caplog):
    ok = spark.createDataFrame([(1, 2), (1, 3), (2, 2)], "user int, item int")
    with pytest.raises(ValueError, match="userCol: column 'user' has 1 null"):
        FMRanker().fit(spark.createDataFrame([(1, 2), (None, 3)], "user int, item int"))
    with pytest.raises(ValueError, match="itemCol: column 'item' has 2 null"):
        FMRanker().fit(spark.createDataFrame([(1, None), (2, None), (1, 4)],
                                             "user int, item int"))
    with pytest.raises(ValueError, match="itemCol: column 'product' is not in the DataFrame"):
        FMRanker(itemCol="product").fit(ok)
    with pytest.raises(TypeError, match="userCol: column 'user' must be an integer user id"):
        FMRanker().fit(spark.createDataFrame([("a", 2)], "user string, item int"))
    with pytest.raises(ValueError, match="single item"):
        FMRanker().fit(spark.createDataFrame([(1, 2), (2, 2)], "user int, item int"))
    with pytest.raises(ValueError, match="empty"):
        FMRanker().fit(ok.where("user < 0"))
    with pytest.raises(ValueError, match="numNegatives"):
        FMRanker(numNegatives=0).fit(ok)
    with caplog.at_level(logging.INFO, logger="sparkxml"):
        model = FMRanker(maxIter=2, miniBatchFraction=1.0, verbose=1).fit(ok)
    assert any("epoch" in r.getMessage() and "loss" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match="numItems"):
        model.recommendForAllUsers(0)
    with pytest.raises(ValueError, match="itemCol: column 'item' is not in the DataFrame"):
        model.transform(ok.select("user"))
    assert model.transform(ok.withColumn("item", F.col("item").cast("long"))).count() == 3
