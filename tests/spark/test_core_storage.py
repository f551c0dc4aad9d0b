"""Model storage in a classic session: a ``file://`` URI goes through Hadoop's filesystem
(Spark's writers), a plain local path through pyarrow, both the same format; a Pipeline
mixing Spark ML and sparkxml stages; formatVersion 1 directories; failed saves; and transform
tasks that read a large model from its directory (once per worker) instead of the closure.
"""
import io
import json
import os
import pickle

import numpy as np
import pytest
from pyspark.ml import PipelineModel
from pyspark.ml.feature import MaxAbsScaler

import sparkxml_kernels
from sparkxml import FastXMLModel, LinearSVCModel
from sparkxml._core import serving as _serving
from sparkxml._core import storage as _storage
from sparkxml.synthetic import make_multilabel, rows_frame
from sparkxml_kernels import model_cache, persist
from sparkxml_kernels.fastxml.forest import train_forest
from sparkxml_kernels.persist import ModelFormatError


@pytest.fixture(scope="module")
def fx(spark):
    """A small FastXML model (trained by the kernel, no Spark job) and a test frame."""
    X, Y = make_multilabel(n_rows=300, n_features=80, n_labels=12, seed=4)
    forest = train_forest(*X, *Y, 80, 12, np.arange(3, dtype=np.int32))
    model = FastXMLModel._create(forest, 80, 12, 1.0)
    df = rows_frame(spark, X, Y, 0, 300, 80).select("features").cache()
    return model, df


def _predictions(model, df):
    return sorted(tuple(map(tuple, r)) for r in
                  model.transform(df).select("prediction", "scores").collect())


def _same_arrays(a, b):
    return list(a._arrays) == list(b._arrays) and all(
        np.array_equal(a._arrays[k], b._arrays[k]) for k in a._arrays)


def test_file_uri_is_written_by_spark_and_reads_back_every_way(fx, tmp_path):
    model, df = fx
    uri = f"file://{tmp_path}/m"
    model.write().save(uri)
    assert model._stored.transport == "spark"
    files = os.listdir(tmp_path / "m" / "data")
    # Hadoop's local filesystem writes checksum files and Spark names its parts: not pyarrow
    assert any(f.endswith(".parquet.crc") for f in files), files
    assert any(f.startswith("part-") and "-c000" in f for f in files), files
    for loaded in (FastXMLModel.load(uri), FastXMLModel.load(str(tmp_path / "m"))):
        assert _same_arrays(loaded, model)
    want = model.predictor.predict(*_csr(df), 5)
    got = sparkxml_kernels.load_model(uri).predictor.predict(*_csr(df), 5)
    np.testing.assert_array_equal(got[0], want[0])
    with pytest.raises(FileExistsError, match="already exists"):
        model.write().save(uri)
    (tmp_path / "f").write_text("a plain file")  # overwrite replaces a file too (as Spark ML)
    model.write().overwrite().save(f"file://{tmp_path}/f")
    assert _same_arrays(FastXMLModel.load(str(tmp_path / "f")), model)


def _csr(df):
    rows = df.collect()
    indptr = np.cumsum([0] + [len(r[0].indices) for r in rows]).astype(np.int64)
    indices = np.concatenate([r[0].indices for r in rows]).astype(np.int32)
    data = np.concatenate([r[0].values for r in rows]).astype(np.float32)
    return indptr, indices, data


def test_mixed_pipeline_on_a_file_uri(spark, fx, tmp_path):
    model, df = fx
    scaler = MaxAbsScaler(inputCol="raw", outputCol="features").fit(
        df.withColumnRenamed("features", "raw"))
    pipe = PipelineModel(stages=[scaler, model])
    raw = df.withColumnRenamed("features", "raw")
    uri = f"file://{tmp_path}/pipe"
    pipe.write().save(uri)
    loaded = PipelineModel.load(uri)
    assert [type(s).__name__ for s in loaded.stages] == ["MaxAbsScalerModel", "FastXMLModel"]
    got = loaded.transform(raw).select("prediction", "scores").collect()
    assert got == pipe.transform(raw).select("prediction", "scores").collect()


def test_format_version_1_directories_load_through_spark_too(fx, tmp_path):
    model, _ = fx
    path = tmp_path / "v1"
    os.makedirs(path / "metadata")
    os.makedirs(path / "data")
    meta = json.loads(persist.metadata_json("sparkxml.fastxml.FastXMLModel", "u1", {}, {},
                                            "fastxml"))
    meta["formatVersion"] = 1
    (path / "metadata" / "part-00000").write_text(json.dumps(meta) + "\n")
    buf = io.BytesIO()
    np.savez(buf, **model._arrays)
    (path / "data" / "arrays.npz").write_bytes(buf.getvalue())
    for where in (str(path), f"file://{path}"):
        loaded = FastXMLModel.load(where)
        assert _same_arrays(loaded, model) and loaded._stored.save_id is None


def test_a_save_through_spark_that_fails_leaves_nothing_that_loads(fx, tmp_path, monkeypatch):
    model, _ = fx
    uri = f"file://{tmp_path}/m"
    model.write().save(uri)
    monkeypatch.setattr(persist, "CHUNK_BYTES", 4096)  # several data writes
    monkeypatch.setattr(persist, "GROUP_BYTES", 4096)
    calls = []

    def failing(*args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("injected failure of the third data write")
        return real(*args, **kw)

    real = _storage.create_dataframe
    monkeypatch.setattr(_storage, "create_dataframe", failing)
    with pytest.raises(OSError, match="injected"):
        model.write().overwrite().save(uri)
    monkeypatch.undo()
    for load in (FastXMLModel.load, sparkxml_kernels.load_model):
        with pytest.raises(ModelFormatError, match="m"):
            load(uri)


def test_large_models_are_read_from_their_directory_once_per_worker(spark, fx, tmp_path):
    model, df = fx
    want = _predictions(model, df)
    path = str(tmp_path / "m")
    model.write().save(path)
    log = tmp_path / "loads.log"
    spark.conf.set(_serving.INLINE_CONF, "0")  # every model counts as large here
    spark.conf.set(_serving.LOAD_LOG_CONF, str(log))
    try:
        loaded = FastXMLModel.load(path)
        handle = loaded._task_model(df)
        assert handle.source == os.path.abspath(path) and handle.inline is None
        assert len(pickle.dumps(handle)) < 1000
        rounds, parts = 2, 4
        for _ in range(rounds):
            assert _predictions(loaded, df.repartition(parts)) == want
        loads = [json.loads(line) for line in log.read_text().splitlines()]
        assert {e["source"] for e in loads} == {os.path.abspath(path)}
        pids = [e["pid"] for e in loads]
        # No worker loads twice, and fewer loads than tasks: some worker ran several tasks on
        # one load. (Not "<= 2 workers": Spark hands out idle Python workers first in, first
        # out, so after a job that left more idle workers than cores, e.g. a FastXML fit
        # leaves 4 on local[2], the tasks rotate through all of them.)
        assert len(pids) == len(set(pids)) and 1 <= len(pids) < rounds * parts, loads
        assert [e["node_cache"] for e in loads].count("miss") == 1, loads
        # the directory is overwritten with another model: its tasks must not read that
        X2, Y2 = make_multilabel(n_rows=100, n_features=80, n_labels=12, seed=9)
        other = FastXMLModel._create(train_forest(*X2, *Y2, 80, 12,
                                                  np.arange(1, dtype=np.int32)), 80, 12, 1.0)
        other.write().overwrite().save(path)
        assert _predictions(loaded, df) == want
        assert loaded._task_copy is not None and loaded._task_copy.root != path
        # a model never saved gets one temporary copy
        fresh = FastXMLModel._create(model._arrays, 80, 12, 1.0)
        assert _predictions(fresh, df) == want
        copy = fresh._task_copy
        assert fresh._stored is None and os.path.isdir(copy.root)
        fresh.transform(df).count()
        assert fresh._task_copy is copy  # saved once
        # small models still travel inline
        spark.conf.set(_serving.INLINE_CONF, str(1 << 30))
        assert loaded._task_model(df).inline is not None
    finally:
        spark.conf.unset(_serving.INLINE_CONF)
        spark.conf.unset(_serving.LOAD_LOG_CONF)
        model_cache.clear()


def test_linear_svm_transform_through_a_directory_keeps_the_current_threshold(spark, tmp_path):
    from pyspark.ml.linalg import Vectors

    from sparkxml_kernels.linear.predictor import LinearSVCPredictor

    pred = LinearSVCPredictor(np.array([[1.0, -2.0]]), np.array([0.5]), 2)
    model = LinearSVCModel(pred)
    path = str(tmp_path / "svm")
    model.write().save(path)
    loaded = LinearSVCModel.load(path).setThreshold(2.0)  # the saved threshold is 0
    df = spark.createDataFrame([(Vectors.dense([3.0, 0.0]),), (Vectors.dense([1.0, 0.0]),)],
                               ["features"])
    spark.conf.set(_serving.INLINE_CONF, "0")
    try:
        assert loaded._task_model(df).source is not None
        got = [r[0] for r in loaded.transform(df).select("prediction").collect()]
    finally:
        spark.conf.unset(_serving.INLINE_CONF)
    assert got == [1.0, 0.0]  # margins 3.5 and 1.5 against the threshold 2


def _every_kind_models():
    """One small model of each predictor-backed kind, built by the kernels (no Spark fit)."""
    from sklearn.tree import DecisionTreeClassifier as SkTree

    from sparkxml import DecisionTreeClassificationModel, FMClassificationModel
    from sparkxml.gbt.estimators import GBTClassificationModel
    from sparkxml_kernels import binning
    from sparkxml_kernels.fm.predictor import FMPredictor
    from sparkxml_kernels.forest.predictor import ForestPredictor
    from sparkxml_kernels.gbt import booster

    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 4))
    X[::7, 2] = 0.0  # zeros: what a changed ``missing`` reads differently
    y = ((X[:, 0] + X[:, 2]) > 0).astype(float)
    edges = binning.edges_from_sketch(binning.sketch(X, np.ones(len(X)), 16), 16)
    gbt, _ = booster.train(binning.bin_data(X, edges), y, None, edges,
                           {"objective": "logistic", "maxIter": 3, "maxDepth": 3,
                            "maxBins": 16})
    t = SkTree(max_depth=4, random_state=0).fit(X, y).tree_
    forest = ForestPredictor(t.children_left, t.children_right, t.feature, t.threshold,
                             t.impurity, t.n_node_samples, t.weighted_n_node_samples,
                             t.value.reshape(t.node_count, -1), np.array([0, t.node_count]),
                             4, 2, "gini")
    fm = FMPredictor(np.zeros(1), rng.normal(size=(1, 4)), rng.normal(size=(1, 4, 3)) * 0.3,
                     "logistic", 4)
    return X, {"gbt": GBTClassificationModel(gbt),
               "tree": DecisionTreeClassificationModel(forest),
               "fm": FMClassificationModel(fm)}


def test_every_model_kind_transforms_the_same_from_its_directory(spark, tmp_path):
    """GBT, trees/forests and FM models (and, above, FastXML and LinearSVC) read their
    arrays in the tasks from the saved directory and predict what the closure-carried model
    predicts, with the params set after loading (GBT's ``missing``)."""
    from pyspark.ml.linalg import Vectors

    X, models = _every_kind_models()
    df = spark.createDataFrame([(Vectors.dense(r),) for r in X.tolist()], ["features"])
    log = tmp_path / "loads.log"
    wants = {}
    for kind, model in models.items():
        path = str(tmp_path / kind)
        model.write().save(path)
        loaded = type(model).load(path)
        if kind == "gbt":
            loaded.setMissing(0.0)
        out = [c for c in loaded.transform(df).columns if c != "features"]
        want = loaded.transform(df).select(*out).collect()  # small: inline
        spark.conf.set(_serving.INLINE_CONF, "0")
        spark.conf.set(_serving.LOAD_LOG_CONF, str(log))
        try:
            assert loaded._task_model(df).source == os.path.abspath(path), kind
            got = loaded.transform(df).select(*out).collect()
        finally:
            spark.conf.unset(_serving.INLINE_CONF)
            spark.conf.unset(_serving.LOAD_LOG_CONF)
        assert got == want, kind
        sources = {json.loads(line)["source"] for line in log.read_text().splitlines()}
        assert os.path.abspath(path) in sources, kind
        wants[kind] = want
    # the changed ``missing`` mattered, so the directory-read predictor did apply it
    default = models["gbt"].transform(df).select("probability").collect()
    assert [tuple(r) for r in default] != [(r["probability"],) for r in wants["gbt"]]
    model_cache.clear()


class _FakeSession:
    """What ``_storage.route`` asks a classic session: its conf (no JVM needed)."""

    def __init__(self, conf):
        self.conf = type("Conf", (), {"get": lambda _, k, d=None: conf.get(k, d)})()


def test_routes_for_databricks_and_hadoop_paths(monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    dbx = _FakeSession({"spark.databricks.clusterUsageTags.clusterId": "0101-abc"})
    monkeypatch.setitem(_storage._local_default_fs, id(dbx), False)  # DBFS is the default fs
    assert _storage.route("/dbfs/models/m", dbx) == ("spark", "dbfs:/models/m")
    assert _storage.route("/Volumes/c/s/v/m", dbx) == ("spark", "/Volumes/c/s/v/m")
    assert _storage.route("models/m", dbx) == ("spark", "models/m")  # what Spark reads there
    for uri in ("dbfs:/m", "s3a://b/m", "wasbs://c@a.blob.core.windows.net/m", "hdfs:///m",
                "file:///tmp/m"):
        assert _storage.route(uri, dbx) == ("spark", uri)
    local = _FakeSession({})
    monkeypatch.setitem(_storage._local_default_fs, id(local), True)
    assert _storage.route("/tmp/m", local) == ("pyarrow", "/tmp/m")
    assert _storage.route("C:/tmp/m", local) == ("pyarrow", "C:/tmp/m")  # a drive, no scheme
    assert _storage.route("/dbfs/m", local) == ("spark", "/dbfs/m")  # not on Databricks
    assert _storage.route("/tmp/m", None) == ("pyarrow", "/tmp/m")  # no session
