"""FMRegressor(loss="ordinal") on local Spark: worker-count invariance, outputs, persistence,
the JVM-free loader, a Pipeline and input errors."""
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import FieldEncoder, FMRegressor
from sparkxml.fm.fm import FMRegressionModel
from sparkxml.synthetic import make_ratings
from sparkxml_kernels.persist import ModelFormatError


@pytest.fixture(scope="module")
def ordinal_ratings(spark):
    cols, rating, _ = make_ratings(1500, n_users=40, n_items=30, seed=4)
    stars = np.digitize(rating, np.quantile(rating, [0.1, 0.3, 0.6, 0.85])) + 1  # 1..5
    names = list(cols)
    rows = [tuple(int(cols[c][i]) for c in names) + (int(stars[i]),)
            for i in range(len(stars))]
    df = spark.createDataFrame(rows, names + ["stars"])
    enc = FieldEncoder(inputCols=names).fit(df)
    return enc.transform(df), enc, names, stars


def _refuses_changed_bytes(path, dst):
    """A copy of the model with 16 bytes of its largest array chunk changed does not load."""
    table = pq.read_table(os.path.join(path, "data", "part-00000.parquet"))
    data = table.column("data").to_pylist()
    i = int(np.argmax([len(d) for d in data]))
    raw = bytearray(data[i])
    raw[len(raw) // 2: len(raw) // 2 + 16] = b"\xa5" * 16
    data[i] = bytes(raw)
    shutil.copytree(path, dst)
    pq.write_table(table.set_column(table.schema.get_field_index("data"), "data",
                                    pa.array(data, pa.binary())),
                   os.path.join(dst, "data", "part-00000.parquet"))
    with pytest.raises(ModelFormatError, match="does not match its checksum"):
        sparkxml_kernels.load_model(dst)


def test_ordinal_fm_workers_outputs_persistence(ordinal_ratings, tmp_path):
    df, enc, names, stars = ordinal_ratings
    est = FMRegressor(loss="ordinal", labelCol="stars", factorSize=3, maxIter=20, burnIn=5,
                      fieldStarts=enc.fieldStarts, seed=1)
    one = est.copy({est.numWorkers: 1}).fit(df)
    two = est.copy({est.numWorkers: 2}).fit(df)
    a, b = one.predictor.to_arrays(), two.predictor.to_arrays()
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert one.isOrdinal and one.classes == [1.0, 2.0, 3.0, 4.0, 5.0] and one.numClasses == 5
    cut = one.cutpoints.toArray()
    assert cut.shape == (4,) and np.all(np.diff(cut) > 0)

    out = one.transform(df).select("stars", "features", "prediction", "probability").collect()
    P = np.array([r.probability.toArray() for r in out])
    pred = np.array([r.prediction for r in out])
    y = np.array([r.stars for r in out], float)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(pred, P @ np.arange(1.0, 6.0), rtol=0, atol=1e-12)
    majority = np.max(np.bincount(stars)) / stars.size
    acc = np.mean(P.argmax(axis=1) + 1 == y)
    assert acc > majority + 0.1, (acc, majority)
    assert np.sqrt(np.mean((pred - y) ** 2)) < np.std(y) * 0.9

    path = str(tmp_path / "ord")
    one.write().save(path)
    loaded = FMRegressionModel.load(path)
    again = loaded.transform(df).select("prediction", "probability").collect()
    assert [r.prediction for r in again] == list(pred)
    meta = sparkxml_kernels.load_metadata(path)
    assert meta["modelKind"] == "fm" and len(meta["chunkCrc32"]) > 0
    _refuses_changed_bytes(path, str(tmp_path / "changed"))
    served = sparkxml_kernels.load_model(path)
    X = np.array([r.features.toArray() for r in out])
    np.testing.assert_array_equal(served.predict(X), pred)
    np.testing.assert_array_equal(served.predict_proba(X), P)

    with pytest.raises(ValueError, match="initModel: the model is an ordinal model"):
        FMRegressor(labelCol="stars", maxIter=3, burnIn=1, factorSize=3,
                    initModel=one).fit(df)

    pipe = Pipeline(stages=[enc, est.copy({est.numWorkers: 2, est.maxIter: 6, est.burnIn: 2})])
    raw = df.drop("features")
    pm = pipe.fit(raw)
    ppath = str(tmp_path / "pipe")
    pm.write().save(ppath)
    first = pm.transform(raw).select("prediction").collect()
    assert PipelineModel.load(ppath).transform(raw).select("prediction").collect() == first


def test_ordinal_fm_bad_input(spark):
    def frame(labels):
        return spark.createDataFrame(
            [(Vectors.dense([float(i % 3), 1.0]), v) for i, v in enumerate(labels)],
            ["features", "label"])

    est = FMRegressor(loss="ordinal", maxIter=3, burnIn=1, factorSize=2)
    with pytest.raises(ValueError, match=r"labelCol: column 'label' holds the labels "
                                         r"\[1, 2, 4\], not consecutive integers \(missing "
                                         r"\[3\]\)"):
        est.fit(frame([1.0, 2.0, 4.0, 1.0]))
    with pytest.raises(ValueError, match="holds the label 1.5; loss='ordinal' needs integer"):
        est.fit(frame([1.0, 1.5, 2.0]))
    with pytest.raises(ValueError, match="single label"):
        est.fit(frame([2.0, 2.0]))
    with pytest.raises(ValueError, match="holds the non-finite value nan"):
        est.fit(frame([1.0, float("nan"), 2.0]))
    with pytest.raises(ValueError, match="solver 'mcmc' only, not solver='als'"):
        est.copy({est.solver: "als"}).fit(frame([0.0, 1.0]))
    df = frame([0.0, 1.0]).selectExpr("*", "1.0 AS w", "true AS v")
    with pytest.raises(ValueError, match="weightCol is not supported with loss='ordinal'"):
        est.copy({est.weightCol: "w"}).fit(df)
    with pytest.raises(ValueError, match="validationIndicatorCol is not supported"):
        est.copy({est.validationIndicatorCol: "v"}).fit(df)
    with pytest.raises(ValueError, match="loss"):
        FMRegressor(loss="hinge").fit(frame([0.0, 1.0]))
