"""A PipelineModel of a FieldEncoderModel and an FM model through the MLflow flavor: the
pyfunc (no JVM) replays the encoder, unseen categories included, and predicts what
``transform`` predicts."""
import mlflow
import numpy as np
import pandas as pd
from pyspark.ml import Pipeline

import sparkxml.mlflow as sxm
from sparkxml import FieldEncoder, FMRegressor


def test_field_encoder_pipeline_served_as_pyfunc(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    rng = np.random.default_rng(4)
    users, items = rng.integers(0, 12, 200), rng.integers(0, 6, 200)
    rows = [(f"u{u}", f"i{i}", float(u % 3 + (i == 2))) for u, i in zip(users, items)]
    df = spark.createDataFrame(rows, ["user", "item", "label"])
    model = Pipeline(stages=[
        FieldEncoder(inputCols=["user", "item"]),
        FMRegressor(maxIter=10, burnIn=2, factorSize=2, seed=3, numWorkers=1)]).fit(df)
    # rows the encoder saw and rows it did not ("keep": an unseen category adds nothing)
    query = spark.createDataFrame([("u1", "i2", 0.0), ("u5", "i0", 0.0), ("zz", "i3", 0.0),
                                   ("u7", "unseen", 0.0)], ["user", "item", "label"])
    want = np.array([r[0] for r in model.transform(query).select("prediction").collect()])
    path = str(tmp_path / "pipe")
    sxm.save_model(model, path)
    pdf = pd.DataFrame({"user": ["u1", "u5", "zz", "u7"], "item": ["i2", "i0", "i3", "unseen"]})
    got = mlflow.pyfunc.load_model(path).predict(pdf)
    np.testing.assert_array_equal(np.asarray(got, np.float64).reshape(-1), want)
    assert len(set(want.round(12))) > 1  # the rows differ: the encoder's output counts
