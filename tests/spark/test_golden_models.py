"""Saved models keep loading: every directory under tests/data/golden/ was written by an
earlier sparkxml (see make_golden.py there); each loads with today's code, through its public
class and through pyspark's generic reader (the class path written in its metadata, as a
saved Pipeline resolves it), and its transform gives what it gave when it was saved, bit for
bit under numpy 2 (where they were saved), within 2 ulp under numpy 1."""
import json
import os

import numpy as np
import pytest
from pyspark.ml import PipelineModel
from pyspark.ml.linalg import Vectors
from pyspark.ml.util import DefaultParamsReader

import sparkxml
import sparkxml_kernels

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "golden")
# the directories were saved under numpy 2 (pyspark 4.x); there predictions are bit for bit
EXACT = int(np.__version__.split(".")[0]) >= 2
KINDS = sorted(d for d in os.listdir(GOLDEN) if os.path.isdir(os.path.join(GOLDEN, d)))


def _generic_load(path, spark):
    """pyspark's own reader, as ``PipelineModel.load`` uses it for a stage (3.5 takes the
    SparkContext, 4.x the session)."""
    import pyspark

    ctx = spark if int(pyspark.__version__.split(".")[0]) >= 4 else spark.sparkContext
    return DefaultParamsReader.loadParamsInstance(path, ctx)


def _plain(v):
    if hasattr(v, "toArray"):
        return [float(x) for x in v.toArray()]
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _frame(spark, kind, inputs):
    cols = inputs["columns"]
    names = list(cols)
    n = len(cols[names[0]])
    if kind == "field_encoder":
        return spark.createDataFrame([tuple(cols[c][i] for c in names) for i in range(n)],
                                     names)
    first = "raw" if kind.startswith("pipeline_") else "features"
    rows = [(Vectors.dense(inputs["features"][i]),) + tuple(cols[c][i] for c in names)
            for i in range(n)]
    return spark.createDataFrame(rows, [first] + names)


def test_every_model_kind_has_a_golden_directory():
    assert len(KINDS) >= 16, KINDS


@pytest.mark.parametrize("kind", KINDS)
def test_golden_model_loads_and_predicts_as_saved(spark, kind):
    with open(os.path.join(GOLDEN, kind, "rows.json")) as f:
        saved = json.load(f)
    path = os.path.join(GOLDEN, kind, "model")
    name = saved["class"].rsplit(".", 1)[1]
    if kind.startswith("pipeline_"):
        model = PipelineModel.load(path)
    else:
        model = getattr(sparkxml, name).load(path)
        # pyspark's own reader imports the class path the metadata names
        generic = _generic_load(path, spark)
        assert type(generic) is type(model)
        assert sparkxml_kernels.load_model(path) is not None
    df = _frame(spark, kind, saved["inputs"])
    cols = list(saved["expected"])
    rows = model.transform(df).select(*cols).collect()
    for c in cols:
        got = [_plain(r[c]) for r in rows]
        if EXACT:
            assert got == saved["expected"][c], (kind, c)
        else:  # numpy 1's exp/log round some last bits differently: at most 2 ulp apart
            np.testing.assert_array_max_ulp(np.asarray(got, float),
                                            np.asarray(saved["expected"][c], float), maxulp=2)


def test_saves_name_the_public_class_path(spark, tmp_path):
    """A save writes ``sparkxml.<Name>``, which pyspark's reader imports whatever module
    defines the class."""
    model = sparkxml.LinearSVCModel.load(os.path.join(GOLDEN, "linear_svc", "model"))
    model.write().save(str(tmp_path / "m"))
    with open(next((tmp_path / "m" / "metadata").glob("part-*"))) as f:
        assert json.loads(f.readline())["class"] == "sparkxml.LinearSVCModel"
    again = _generic_load(str(tmp_path / "m"), spark)
    assert type(again) is sparkxml.LinearSVCModel
    with pytest.raises(Exception, match="holds a sparkxml.LinearSVCModel, not a "
                                        "sparkxml.GBTRegressionModel"):
        sparkxml.GBTRegressionModel.load(str(tmp_path / "m"))
