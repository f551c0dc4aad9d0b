"""FastXML estimator on local[2]: accuracy, determinism, persistence, errors."""
import os

import numpy as np
import pytest
import scipy.sparse as sp
from _data import data_path
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import FastXML, FastXMLModel, XMLEvaluator
from sparkxml.datasets import read_xc
from sparkxml.synthetic import csr_rows, make_multilabel, rows_frame
from sparkxml_kernels.persist import ModelFormatError


@pytest.fixture(scope="module")
def synth(spark):
    X, Y = make_multilabel(n_rows=1500, n_features=600, n_labels=60, seed=3)
    train = rows_frame(spark, X, Y, 0, 1200, 600).repartition(3).cache()
    test = rows_frame(spark, X, Y, 1200, 1500, 600).cache()
    return train, test, (X, Y)


@pytest.fixture(scope="module")
def synth_model(synth):
    return FastXML(numTrees=6, numWorkers=2, seed=7).fit(synth[0])


def _predictions(model, df):
    rows = model.transform(df).select("prediction", "scores").collect()
    return [list(r[0]) for r in rows], [list(r[1]) for r in rows]


def test_learns_beyond_most_frequent_label(synth, synth_model):
    train, test, _ = synth
    p1 = XMLEvaluator(metricName="precisionAtK", k=1).evaluate(synth_model.transform(test))
    counts = np.bincount(np.concatenate([r[0] for r in train.select("labels").collect()]))
    labels = test.select("labels").collect()
    baseline = np.mean([int(np.argmax(counts)) in r[0] for r in labels])
    assert p1 > baseline + 0.2, (p1, baseline)


def test_output_columns_best_first(synth, synth_model):
    out = synth_model.setTopK(4).transform(synth[1])
    assert out.schema["prediction"].dataType.simpleString() == "array<int>"
    assert out.schema["scores"].dataType.simpleString() == "array<float>"
    for r in out.select("prediction", "scores").collect():
        assert 1 <= len(r[0]) <= 4 and len(r[0]) == len(r[1])
        assert all(a >= b for a, b in zip(r[1], r[1][1:]))
        assert all(s > 0 for s in r[1])
    synth_model.setTopK(5)


def test_same_model_whatever_num_workers(synth, synth_model):
    train, test, _ = synth
    one = FastXML(numTrees=6, numWorkers=1, seed=7).fit(train)
    assert _predictions(one, test) == _predictions(synth_model, test)
    threads = FastXML(numTrees=6, numWorkers=1, seed=7, nthread=3).fit(train)
    assert threads.getNthread() == 3
    assert _predictions(threads, test) == _predictions(synth_model, test)
    other_seed = FastXML(numTrees=6, numWorkers=2, seed=8).fit(train)
    assert _predictions(other_seed, test) != _predictions(synth_model, test)


def test_model_through_the_result_shuffle_is_the_direct_one(synth, synth_model, monkeypatch):
    from sparkxml.fastxml import fit as fxfit

    train, test, (X, Y) = synth
    stats = {"rows": 1200, "nnz_x": int(X[0][1200]), "nnz_y": int(Y[0][1200])}  # CSR indptr
    real = sum(a.nbytes for a in synth_model._arrays.values() if hasattr(a, "nbytes"))
    assert fxfit.forest_bytes_estimate(stats, 6) > real > 0  # the estimate overshoots
    assert not fxfit.forest_spread(stats, 6)
    monkeypatch.setattr(fxfit, "SPREAD_FOREST_BYTES", 0)  # every fit through the shuffle
    assert fxfit.forest_spread(stats, 6)
    spread = FastXML(numTrees=6, numWorkers=2, seed=7).fit(train)
    assert _predictions(spread, test) == _predictions(synth_model, test)


def test_save_load_identical_and_kernel_loader(synth, synth_model, tmp_path):
    path = str(tmp_path / "m")
    synth_model.write().save(path)
    loaded = FastXMLModel.load(path)
    assert loaded.uid == synth_model.uid and loaded.getNumTrees() == 6
    assert _predictions(loaded, synth[1]) == _predictions(synth_model, synth[1])
    # Without Spark: the same directory, the same top-k.
    X, _ = synth[2]
    (xi, xj, xv), _ = csr_rows(X, synth[2][1], 1200, 1500)
    served = sparkxml_kernels.load_model(path)
    X_csr = sp.csr_matrix((xv, xj, xi), shape=(len(xi) - 1, served.n_features))
    labels, scores = served.predict_topk(X_csr, 5)
    want_l, want_s = _predictions(synth_model, synth[1])
    assert labels == want_l
    assert scores == want_s  # float32 values, bit for bit
    # the family's kernel predictor: padded (n, k) arrays
    padded_l, padded_s = served.predictor.predict(xi, xj, xv, 5)
    for i in range(len(want_l)):
        n = len(want_l[i])
        assert padded_l[i, :n].tolist() == want_l[i]
        assert (padded_l[i, n:] == -1).all()
    with pytest.raises(FileExistsError):
        synth_model.write().save(path)
    synth_model.write().overwrite().save(path)
    assert FastXMLModel.load(path).uid == synth_model.uid


def test_pipeline_round_trip(synth, tmp_path):
    train, test, _ = synth
    pipe = Pipeline(stages=[FastXML(numTrees=3, numWorkers=2, topK=3)])
    model = pipe.fit(train)
    path = str(tmp_path / "pipe")
    model.write().save(path)
    loaded = PipelineModel.load(path)
    assert isinstance(loaded.stages[0], FastXMLModel)
    a = model.transform(test).select("prediction", "scores").collect()
    b = loaded.transform(test).select("prediction", "scores").collect()
    assert a == b
    est_path = str(tmp_path / "est")
    FastXML(numTrees=9, maxLeaf=4).write().save(est_path)
    est = FastXML.load(est_path)
    assert est.getNumTrees() == 9 and est.getMaxLeaf() == 4


def test_failed_save_leaves_nothing_that_loads(synth_model, tmp_path, monkeypatch):
    from sparkxml_kernels import persist

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(persist, "data_batches", boom)
    path = str(tmp_path / "broken")
    with pytest.raises(OSError):
        synth_model.write().save(path)
    assert not os.path.exists(path)
    assert os.listdir(tmp_path) == []


def test_rows_without_labels_train_and_score_zero(spark):
    rows = [(Vectors.sparse(4, [i % 4], [1.0]), [i % 3] if i % 5 else []) for i in range(40)]
    df = spark.createDataFrame(rows, ["features", "labels"])
    model = FastXML(numTrees=2, numWorkers=1, maxLeaf=5).fit(df)
    out = model.transform(df)
    p = XMLEvaluator(metricName="precisionAtK", k=1).evaluate(out)
    assert 0.0 <= p <= 1.0


def test_bad_input_errors(spark, synth_model, tmp_path):
    good = spark.createDataFrame([(Vectors.sparse(3, [0], [1.0]), [1])], ["features", "labels"])
    with pytest.raises(TypeError, match="featuresCol: column 'x'"):
        FastXML().setFeaturesCol("x").fit(good.withColumnRenamed("features", "x")
                                          .withColumn("x", good["labels"]))
    with pytest.raises(ValueError, match="column 'nope'"):
        FastXML(featuresCol="nope").fit(good)
    with pytest.raises(TypeError, match="labelsCol: column 'labels' must be array<int>"):
        FastXML().fit(spark.createDataFrame([(Vectors.sparse(3, [0], [1.0]), [1.5])],
                                            ["features", "labels"]))
    with pytest.raises(ValueError, match="negative label id -2"):
        FastXML(numTrees=1).fit(spark.createDataFrame(
            [(Vectors.sparse(3, [0], [1.0]), [-2])], ["features", "labels"]))
    with pytest.raises(ValueError, match="different sizes"):
        FastXML(numTrees=1).fit(spark.createDataFrame(
            [(Vectors.sparse(3, [0], [1.0]), [1]), (Vectors.sparse(4, [0], [1.0]), [1])],
            ["features", "labels"]).repartition(2))
    with pytest.raises(ValueError, match="empty"):
        FastXML(numTrees=1).fit(good.limit(0))
    with pytest.raises(ValueError, match="numTrees=0"):
        FastXML(numTrees=0).fit(good)
    with pytest.raises(ValueError, match="logLossCoeff=-1.0"):
        FastXML(logLossCoeff=-1.0).fit(good)
    with pytest.raises(Exception, match="expected 600"):
        synth_model.transform(good).collect()


def test_bad_model_directories(spark, synth_model, tmp_path):
    with pytest.raises(ModelFormatError, match="does not exist"):
        FastXMLModel.load(str(tmp_path / "missing"))
    path = str(tmp_path / "m")
    synth_model.write().save(path)
    with open(os.path.join(path, "data", "part-00000.parquet"), "wb") as f:
        f.write(b"not parquet")
    with pytest.raises(ModelFormatError, match="corrupt"):
        FastXMLModel.load(path)
    with pytest.raises(ModelFormatError, match="corrupt"):
        sparkxml_kernels.load_model(path)
    other = str(tmp_path / "est")
    FastXML().write().save(other)
    with pytest.raises(ModelFormatError, match=r"not a sparkxml\.FastXMLModel"):
        FastXMLModel.load(other)
    from pyspark.ml.feature import StringIndexer

    foreign = str(tmp_path / "foreign")
    StringIndexer(inputCol="a", outputCol="b").write().save(foreign)
    with pytest.raises(ModelFormatError):
        FastXMLModel.load(foreign)
    with pytest.raises(ModelFormatError, match="not written by sparkxml"):
        sparkxml_kernels.load_model(foreign)


def test_memory_check_fails_early_with_the_figure():
    from sparkxml.fastxml.fastxml import _check_memory

    class Conf:
        def get(self, key, default=None):
            return {"spark.executor.pyspark.memory": "1m", "spark.master": "yarn"}.get(key)

    class FakeSpark:
        conf = Conf()

    stats = dict(rows=10**6, nnz_x=10**8, nnz_y=5 * 10**6, n_features=10**6, n_labels=10**5)
    with pytest.raises(MemoryError, match=r"needs about \d+ MiB, but only 1 MiB"):
        _check_memory(FakeSpark(), stats, 2)
    # each thread of a task keeps its own working copy of the node data
    from sparkxml.fastxml.fit import replicated_bytes

    one, two = replicated_bytes(stats), replicated_bytes(stats, threads=2)
    assert one < two < 2 * one
    with pytest.raises(MemoryError, match="on 3 threads.*lower numWorkers or nthread"):
        _check_memory(FakeSpark(), stats, 2, threads=3)


def test_partition_keys_match_spark_hash(spark):
    from sparkxml._core.partitioning import partition_keys, spark_hash_long

    vals = [0, 1, -1, 2**40 + 5, 123456789]
    got = spark.createDataFrame([(v,) for v in vals], "v long").selectExpr("hash(v)").collect()
    assert [r[0] for r in got] == [spark_hash_long(v) for v in vals]
    keys = partition_keys(5)
    df = spark.createDataFrame([(k,) for k in keys], "k long").repartition(5, "k")
    parts = df.selectExpr("k", "spark_partition_id() as p").collect()
    assert sorted((keys.index(r[0]), r[1]) for r in parts) == [(i, i) for i in range(5)]


def test_bibtex_precision_matches_authors_cpp(spark):
    train = read_xc(spark, data_path("bibtex", "xc_split", "bibtex_train.txt")).cache()
    test = read_xc(spark, data_path("bibtex", "xc_split", "bibtex_test.txt")).cache()
    # rowOrder="input": the rows in file order, as the authors' C++ reads them
    model = FastXML(numWorkers=2, rowOrder="input").fit(train)
    pred = model.transform(test).cache()
    p = {k: XMLEvaluator(metricName="precisionAtK", k=k).evaluate(pred) for k in (1, 3, 5)}
    print("Bibtex", " ".join(f"P@{k} {v:.4f}" for k, v in p.items()))
    # The issue's bars. Seed 0 grows the authors' trees 0..49 (tests/kernels checks trees
    # against theirs), which measured 0.6441/0.3966/0.2915 with their C++.
    assert p[1] >= 0.635 and p[3] >= 0.390 and p[5] >= 0.286, p
