"""FFMRegressor / FFMClassifier on local Spark: the same model for any numWorkers and
partitioning, persistence, the JVM-free loader, Pipelines with FieldEncoder, progress and
input errors."""
import logging
import os

import numpy as np
import pytest
from _data import data_path
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.evaluation import RegressionEvaluator
from pyspark.sql import functions as F
from test_fm import A9A_FIELDS  # a9a's 14 Adult attributes (one-hot groups)

import sparkxml_kernels
from sparkxml import FFMClassifier, FFMRegressor, FieldEncoder
from sparkxml.datasets import from_csr
from sparkxml.fm.ffm import FFMClassificationModel
from sparkxml.synthetic import make_ratings


@pytest.fixture(scope="module")
def a9a_small(spark):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(data_path("a9a", "a9a"), n_features=123)
    X, y = X[:3000], (y[:3000] > 0).astype(float)
    df = from_csr(spark, X.indptr, X.indices, X.data, 123, columns={"label": y})
    return X, y, df.cache()


def _probs(model, df):
    return np.array([r[0][1] for r in model.transform(df).select("probability").collect()])


def test_ffm_same_model_for_any_workers_persistence_and_progress(a9a_small, tmp_path,
                                                                  caplog):
    from sklearn.metrics import roc_auc_score

    X, y, df = a9a_small
    caplog.set_level(logging.INFO, logger="sparkxml")
    est = FFMClassifier(fieldStarts=A9A_FIELDS, maxIter=4, seed=1, verbose=1)
    one = est.copy({est.numWorkers: 1}).fit(df.repartition(3))
    two = est.copy({est.numWorkers: 2}).fit(df)
    assert [i["world_size"] for i in two.summary.workerInfo] == [2, 2]
    a, b = one.predictor.to_arrays(), two.predictor.to_arrays()
    for key in a:  # the same sequential pass, bit for bit
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert one.factors.shape == (123, 14, 4) and one.numFields == 14
    loss = two.summary.history["loss"]
    assert len(loss) == 4 and loss[-1] < loss[0]
    lines = [r.getMessage() for r in caplog.records if "FFMClassifier epoch" in r.getMessage()]
    assert len(lines) >= 8 and "loss=" in lines[-1], lines  # one a epoch, for each fit
    p = _probs(two, df)
    assert roc_auc_score(y, p) > 0.88

    path = str(tmp_path / "ffm")
    two.write().save(path)
    two.write().overwrite().save(path)
    loaded = FFMClassificationModel.load(path)
    np.testing.assert_array_equal(_probs(loaded, df), p)
    assert loaded.summary.history["loss"] == loss
    served = sparkxml_kernels.load_model(path)
    np.testing.assert_array_equal(served.predict_proba(X)[:, 1], p)
    np.testing.assert_array_equal(served.predict(X), (p > 0.5).astype(float))


def test_ffm_input_errors(spark, a9a_small):
    _, _, df = a9a_small
    small = df.limit(50)
    with pytest.raises(ValueError, match="fieldStarts is required"):
        FFMClassifier().fit(small)
    with pytest.raises(ValueError, match=r"fieldStarts=\[0, 60, 123\] does not fit the "
                                         r"vectors"):
        FFMClassifier(fieldStarts=[0, 60, 123]).fit(small)
    with pytest.raises(ValueError, match=r"fieldStarts=\[5, 60\] is invalid"):
        FFMClassifier(fieldStarts=[5, 60]).fit(small)
    with pytest.raises(ValueError, match=r"fieldStarts=\[0, 60, 30\] is invalid"):
        FFMClassifier(fieldStarts=[0, 60, 30]).fit(small)
    with pytest.raises(ValueError, match="param solver='sgd' is invalid"):
        FFMClassifier(fieldStarts=[0], solver="sgd").fit(small)
    with pytest.raises(ValueError, match="holds the label 2.0"):
        FFMClassifier(fieldStarts=[0]).fit(small.withColumn("label", F.lit(2.0)))


def test_ffm_pipeline_takes_its_fields_from_the_field_encoder(spark, tmp_path):
    cols, rating, _ = make_ratings(3000, n_users=50, n_items=30, seed=2)
    names = list(cols)
    rows = [tuple(int(cols[c][i]) for c in names) + (float(rating[i]),)
            for i in range(len(rating))]
    df = spark.createDataFrame(rows, names + ["rating"])
    # no fieldStarts: the encoder's output column carries them
    pipe = Pipeline(stages=[FieldEncoder(inputCols=names),
                            FFMRegressor(labelCol="rating", maxIter=10, numWorkers=2)]).fit(df)
    enc, ffm = pipe.stages
    np.testing.assert_array_equal(ffm.predictor.field_starts[:-1], enc.fieldStarts)
    ev = RegressionEvaluator(labelCol="rating")
    rmse = ev.evaluate(pipe.transform(df))
    assert rmse < 0.8 * float(np.std(rating)), (rmse, np.std(rating))
    path = str(tmp_path / "pipe")
    pipe.write().save(path)
    again = PipelineModel.load(path)
    a = pipe.transform(df).select("prediction").collect()
    assert again.transform(df).select("prediction").collect() == a
    stage = os.path.join(path, "stages", sorted(os.listdir(os.path.join(path, "stages")))[1])
    Xp = enc.vocabulary.encode([np.asarray(df.select(c).toPandas()[c]) for c in names])
    got = sparkxml_kernels.load_model(stage).predict((Xp[0], Xp[1], Xp[2], enc.numFeatures))
    np.testing.assert_array_equal(got, [r[0] for r in a])
