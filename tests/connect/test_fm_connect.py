"""FM, GBFM, FFM and FieldEncoder over Spark Connect: the checks job, the barrier stage, transform,
save/overwrite/load, Pipeline persistence and the JVM-free loaders."""
import numpy as np
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import FFMRegressor, FieldEncoder, FMClassifier, GBFMRegressor
from sparkxml.fm.fm import FMClassificationModel
from sparkxml.synthetic import make_ratings


def test_fm_and_gbfm_over_connect(spark_connect, tmp_path):
    spark = spark_connect
    rng = np.random.default_rng(0)
    X = (rng.random((600, 12)) < 0.3).astype(float)
    y = ((X[:, 0] * X[:, 1] + X[:, 2] - X[:, 3]) > 0.5).astype(float)
    df = spark.createDataFrame([(Vectors.dense(X[i]), float(y[i])) for i in range(600)],
                               ["features", "label"])
    model = FMClassifier(maxIter=12, burnIn=2, factorSize=4, numWorkers=2).fit(df)
    assert [i["world_size"] for i in model.summary.workerInfo] == [2, 2]
    p = np.array([r[0][1] for r in model.transform(df).select("probability").collect()])
    assert np.mean((p > 0.5) == (y > 0.5)) > 0.8
    path = str(tmp_path / "fm")
    model.write().save(path)
    model.write().overwrite().save(path)  # no JVM needed for overwrite
    loaded = FMClassificationModel.load(path)
    p2 = np.array([r[0][1] for r in loaded.transform(df).select("probability").collect()])
    np.testing.assert_array_equal(p2, p)
    np.testing.assert_allclose(sparkxml_kernels.load_model(path).predict_proba(X)[:, 1], p,
                               rtol=0, atol=1e-12)

    cols, rating, _ = make_ratings(1500, n_users=30, n_items=20, seed=1)
    names = list(cols)
    rows = [tuple(int(cols[c][i]) for c in names) + (float(rating[i]),)
            for i in range(len(rating))]
    ratings = spark.createDataFrame(rows, names + ["rating"])
    enc = FieldEncoder(inputCols=names).fit(ratings)
    pipe = Pipeline(stages=[enc, GBFMRegressor(labelCol="rating", fieldStarts=enc.fieldStarts,
                                               numStages=6, factorSize=3, jointIter=10,
                                               burnIn=2, numWorkers=2)]).fit(ratings)
    pairs = [frozenset(s["fields"]) for s in pipe.stages[1].stages]
    assert 1 <= len(pairs) == len(set(pairs)) <= 6  # the joint fit: one stage per pair
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    a = pipe.transform(ratings).select("prediction").collect()
    assert again.transform(ratings).select("prediction").collect() == a


def test_ffm_pipeline_over_connect(spark_connect, tmp_path):
    """FFM takes its fields from the FieldEncoder's column metadata, trains in two barrier
    tasks and round-trips through Pipeline persistence and load_model, all over Connect."""
    import os

    spark = spark_connect
    cols, rating, _ = make_ratings(1200, n_users=30, n_items=20, seed=3)
    names = list(cols)
    rows = [tuple(int(cols[c][i]) for c in names) + (float(rating[i]),)
            for i in range(len(rating))]
    ratings = spark.createDataFrame(rows, names + ["rating"])
    pipe = Pipeline(stages=[FieldEncoder(inputCols=names),
                            FFMRegressor(labelCol="rating", maxIter=3, numWorkers=2)]
                    ).fit(ratings)
    enc, ffm = pipe.stages
    assert ffm.predictor.field_starts[:-1].tolist() == enc.fieldStarts
    assert [i["world_size"] for i in ffm.summary.workerInfo] == [2, 2]
    ppath = str(tmp_path / "ffm_pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    a = [r[0] for r in pipe.transform(ratings).select("prediction").collect()]
    assert [r[0] for r in again.transform(ratings).select("prediction").collect()] == a
    stages = sorted(os.listdir(os.path.join(ppath, "stages")))
    served = sparkxml_kernels.load_model(os.path.join(ppath, "stages", stages[1]))
    Xp = enc.vocabulary.encode([np.asarray(cols[c]) for c in names])
    np.testing.assert_array_equal(served.predict((Xp[0], Xp[1], Xp[2], enc.numFeatures)), a)
