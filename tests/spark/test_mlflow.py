"""The ``sparkxml`` MLflow flavor against a real tracking store (sqlite, in a temp dir) and a
real REST server (``mlflow models serve --env-manager local`` on a free loopback port):
log, load as pyfunc, ``spark_udf`` and ``/invocations`` all give ``transform``'s
predictions."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import mlflow
import numpy as np
import pandas as pd
import pytest
from pyspark.ml import Pipeline
from pyspark.ml.feature import VectorAssembler

import sparkxml.mlflow as sxm
from sparkxml import FastXML, GBTClassifier
from sparkxml.synthetic import make_multilabel, rows_frame

COLS = ["a", "b", "c"]
SERVER_START_S = 300  # the server's start (imports, model load) on a loaded machine


@pytest.fixture
def tracking(tmp_path, monkeypatch):
    """A sqlite tracking store and an artifact root, both in ``tmp_path``."""
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("DO_NOT_TRACK", "true")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    exp = mlflow.create_experiment("sparkxml", artifact_location=(tmp_path / "art").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    yield uri
    mlflow.set_tracking_uri(None)


@pytest.fixture(scope="module")
def tab(spark):
    rng = np.random.default_rng(1)
    X = np.round(rng.normal(size=(200, 3)), 3)
    y = (X[:, 0] - X[:, 1] * X[:, 2] > 0).astype(float)
    rows = [(*map(float, X[i]), float(y[i])) for i in range(len(y))]
    return spark.createDataFrame(rows, [*COLS, "label"]).cache()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(model_uri, tracking_uri, body):
    """Start ``mlflow models serve`` on 127.0.0.1, POST ``body`` to /invocations, stop it."""
    port = _free_port()
    bin_dir = os.path.dirname(sys.executable)  # uvicorn of this environment
    env = dict(os.environ, MLFLOW_TRACKING_URI=tracking_uri,
               PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "models", "serve", "-m", model_uri,
                             "-h", "127.0.0.1", "-p", str(port), "--env-manager", "local"],
                            env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited: {proc.stdout.read().decode()[-3000:]}")
            try:
                urllib.request.urlopen(url + "/ping", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no answer on {url}/ping in {SERVER_START_S} s")
                time.sleep(1)
        req = urllib.request.Request(url + "/invocations", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(30)


def test_pipeline_logged_served_over_rest_and_as_spark_udf(spark, tab, tracking):
    pipe = Pipeline(stages=[VectorAssembler(inputCols=COLS, outputCol="features"),
                            GBTClassifier(maxIter=5, maxDepth=3, numWorkers=1, seed=1)]).fit(tab)
    want = [r[0] for r in pipe.transform(tab).select("prediction").collect()]
    with mlflow.start_run():
        info = sxm.log_model(pipe, name="model")
    # the signature and the input example come from the model: its input columns
    assert [c.name for c in info.signature.inputs.inputs] == COLS
    assert info.saved_input_example_info is not None
    pdf = tab.select(*COLS).toPandas()
    pyfunc = mlflow.pyfunc.load_model(info.model_uri)
    np.testing.assert_array_equal(pyfunc.predict(pdf), want)
    served = sxm.load_model(info.model_uri)
    np.testing.assert_array_equal(served.predict(pdf), want)
    udf = mlflow.pyfunc.spark_udf(spark, info.model_uri, result_type="double",
                                  env_manager="local")
    got = [r[0] for r in tab.select(udf(*COLS)).collect()]
    np.testing.assert_array_equal(got, want)
    reply = _serve(info.model_uri, tracking,
                   {"dataframe_split": {"columns": COLS, "data": pdf.values.tolist()}})
    np.testing.assert_array_equal(reply["predictions"], want)


def test_xml_model_saved_and_loaded_as_pyfunc(spark, tmp_path, tracking):
    X, Y = make_multilabel(n_rows=300, n_features=50, n_labels=12, seed=2)
    df = rows_frame(spark, X, Y, 0, 300, 50).cache()
    model = FastXML(numTrees=3, numWorkers=1, maxLeaf=5, seed=1).fit(df).setTopK(4)
    want = model.transform(df).select("prediction", "scores").collect()
    path = str(tmp_path / "xml")
    sxm.save_model(model, path)
    pdf = pd.DataFrame({"features": [r[0].toArray() for r in df.select("features").collect()]})
    out = mlflow.pyfunc.load_model(path).predict(pdf)
    assert [list(p) for p in out["prediction"]] == [list(r[0]) for r in want]
    assert [list(s) for s in out["scores"]] == [list(r[1]) for r in want]
    labels, _ = sxm.load_model(path).predict_topk(pdf, 4)
    assert labels == [list(r[0]) for r in want]


def test_unservable_pipeline_is_refused_naming_the_stage(tab, tmp_path):
    from pyspark.ml.feature import StandardScaler

    pipe = Pipeline(stages=[VectorAssembler(inputCols=COLS, outputCol="v"),
                            StandardScaler(inputCol="v", outputCol="features"),
                            GBTClassifier(maxIter=2, numWorkers=1)]).fit(tab)
    with pytest.raises(ValueError, match=r"stage 1 \(StandardScalerModel\)"):
        sxm.save_model(pipe, str(tmp_path / "m"))
    assert not os.path.exists(tmp_path / "m")
