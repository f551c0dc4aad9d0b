"""Input whose sizes drive allocations, and input the workers used to report with a raw trace:
a ValueError naming the column (and the value or size) before the training job, or from the
transform task with the param and column named.

Covers LinearSVC's transform (another vector size, NaN, inf, a null vector) and its fit on a
SparseVector of size 2**31 - 1, GBT and LambdaMART on that width, FM and GBFM on that width
and on a null vector, FastXML /
PfastreXML on that width, on vectors of size 0, on a single row and on a label id of 10**9,
and the CLI's ``--master local[0]`` and workers that cannot import sparkxml."""
import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkxml import (
    FMClassifier,
    FMRegressor,
    GBFMRegressor,
    LinearSVC,
    PfastreXML,
    cli,
    session,
)

WIDE = 2**31 - 1


def _df(spark, X, y):
    return spark.createDataFrame([(Vectors.dense(x), float(v)) for x, v in
                                  zip(np.asarray(X).tolist(), y)], ["features", "label"])


@pytest.fixture(scope="module")
def svc(spark):
    X = np.random.default_rng(0).normal(size=(30, 6))
    return LinearSVC(numWorkers=1, maxIter=5).fit(_df(spark, X, (X[:, 0] > 0) * 1.0))


def _batch(rows, size, null=False):
    """One Arrow batch of a VectorUDT column 'features': ``rows`` dense rows of ``size``
    values, the last one null when ``null``."""
    import pyarrow as pa

    from sparkxml.datasets import vector_array

    X = np.asarray(rows, np.float64).reshape(len(rows), -1)
    n, k = X.shape
    col = vector_array(np.arange(0, n * k + 1, k), np.tile(np.arange(k), n), X.ravel(), size)
    if null:
        col = pa.StructArray.from_arrays(col.flatten(), fields=list(col.type),
                                         mask=pa.array([False] * (n - 1) + [True]))
    return pa.RecordBatch.from_arrays([col], names=["features"])


@pytest.mark.parametrize("batch, message", [
    (_batch([[1.0] * 5], 5), r"featuresCol: column 'features' has a vector of size 5, "
                             r"expected 6 \(the model has 6 features\)"),
    (_batch([[1.0]], 100_000), r"featuresCol: column 'features' has a vector of size 100000, "
                               r"expected 6"),
    (_batch([[1.0]], WIDE), rf"has a vector of size {WIDE}, expected 6"),
    (_batch([[1.0, float("nan")] * 3], 6), r"featuresCol: column 'features' holds the value "
                                           r"nan"),
    (_batch([[float("inf")] * 6], 6), r"featuresCol: column 'features' holds the value inf"),
    (_batch([[0.5] * 6, [0.5] * 6], 6, null=True), r"featuresCol: column 'features' has a "
                                                   r"null vector \(row 1 of this partition\)"),
], ids=["size5", "size1e5", "size2^31-1", "nan", "inf", "null"])
def test_linear_svc_transform_task_names_the_column_and_value(svc, batch, message):
    """The transform's task function on one batch (through Spark, the same ValueError ends
    the PythonException, after the task's retries). Before: the last line said 'column ... expected 6' without
    the param, or for a null vector nothing the user could act on."""
    from sparkxml.linear.tasks import make_predict_fn

    predict = make_predict_fn(svc.predictor.to_arrays(), "features", "raw", "pred")
    with pytest.raises(ValueError, match=message):
        list(predict(iter([batch])))


@pytest.fixture(scope="module")
def wide(spark):
    """Six rows of a SparseVector of size 2**31 - 1 with 3 non-zeros (valid input)."""
    return spark.createDataFrame([(Vectors.sparse(WIDE, [0, 5, 9 + i], [1.0, 2.0, 3.0]),
                                   float(i % 2)) for i in range(6)], ["features", "label"])


def test_linear_svc_refuses_a_width_it_would_hold_dense(wide):
    """Before: a raw 'Unable to allocate 16.0 GiB' from a worker."""
    with pytest.raises(ValueError, match=rf"featuresCol: column 'features' holds vectors of "
                                         rf"size {WIDE}: more weights than 268435456"):
        LinearSVC(numWorkers=1).fit(wide)


@pytest.mark.parametrize("est", [FMRegressor(numWorkers=1, maxIter=10),
                                 FMClassifier(numWorkers=1, maxIter=10, factorSize=4),
                                 GBFMRegressor(numWorkers=1, numStages=1, fieldStarts=[0, 5])],
                         ids=["fm", "fm-classifier", "gbfm"])
def test_fm_width_times_factor_size_bounded_before_training(wide, est, monkeypatch):
    """Before: every worker passed 6 GB. Now the driver refuses after the data checks,
    before the training stage (stubbed here to fail if reached)."""
    import sparkxml.fm.base as fm_base

    def never(*a, **kw):
        raise AssertionError("the training stage was started")

    monkeypatch.setattr(fm_base, "run_barrier_training", never)
    k = est.getFactorSize()
    with pytest.raises(ValueError, match=rf"featuresCol: column 'features' holds vectors of "
                                         rf"size {WIDE}: factorSize \+ 1 = {k + 1} values a "
                                         rf"feature make \d+ values, above the limit"):
        est.fit(wide)


def _never_train(monkeypatch, *modules):
    def never(*a, **kw):
        raise AssertionError("the training stage was started")

    for m in modules:
        monkeypatch.setattr(m, "run_barrier_training", never)


@pytest.mark.parametrize("kind", ["gbt", "lambdamart"])
def test_boosting_refuses_the_width_on_the_driver(wide, kind, monkeypatch):
    """No size metadata on the column: the checks job sizes a few stored vectors (no dense
    array of 2**31 - 1 values in the JVM) and the driver refuses the width before the
    training stage. Before: GBT built a list of 2**31 feature names on the driver."""
    from pyspark.sql import functions as F

    import sparkxml.gbt.fit as gbt_fit
    import sparkxml.gbt.lambdamart as lambdamart
    from sparkxml import GBTClassifier, LambdaMART

    _never_train(monkeypatch, gbt_fit, lambdamart)
    if kind == "gbt":
        est, df = GBTClassifier(numWorkers=1, maxIter=2), wide
    else:
        est = LambdaMART(numWorkers=1, maxIter=2, groupCol="qid")
        df = wide.withColumn("qid", F.lit(1))
    with pytest.raises(ValueError, match=rf"featuresCol: column 'features' holds vectors of "
                                         rf"size {WIDE}: maxBins \+ 1 = 257 histogram slots "
                                         rf"a feature make \d+ values, above the limit"):
        est.fit(df)


@pytest.mark.parametrize("kind", ["tree", "forest"])
def test_trees_refuse_a_recorded_width_before_any_job(wide, kind, monkeypatch):
    """The column's metadata records the width (as VectorAssembler and HashingTF do): the
    driver refuses it before the checks job, whose infinity scan reads every vector densely
    (a 2**31 - 1 wide one made the local JVM die)."""
    import sparkxml.forest.base as forest_base
    from sparkxml import DecisionTreeClassifier, RandomForestRegressor

    def never(*a, **kw):
        raise AssertionError("the checks job was started")

    monkeypatch.setattr(forest_base, "data_checks", never)
    df = wide.withMetadata("features", {"ml_attr": {"num_attrs": WIDE}})
    est = DecisionTreeClassifier() if kind == "tree" else RandomForestRegressor(numTrees=2)
    with pytest.raises(ValueError, match=rf"featuresCol: column 'features' holds vectors of "
                                         rf"size {WIDE}: trees bin every feature of a row, "
                                         rf"and rows of more than 268435456 values are "
                                         rf"refused"):
        est.fit(df)


def _frame(spark, rows, second):
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import types as T

    return spark.createDataFrame(rows, T.StructType([T.StructField("features", VectorUDT()),
                                                     second]))


def test_fm_and_gbfm_name_a_null_vector(spark):
    """Before: 'vectors of different sizes: 0 and 2'."""
    from pyspark.sql import types as T

    df = _frame(spark, [(Vectors.dense([1.0, float(i)]), 1.0) for i in range(5)] + [(None, 0.0)],
                T.StructField("label", T.DoubleType()))
    for est in (FMRegressor(numWorkers=1, maxIter=10),
                GBFMRegressor(numWorkers=1, numStages=1, fieldStarts=[0, 1])):
        with pytest.raises(ValueError, match=r"featuresCol: column 'features' holds 1 null "
                                             r"vector\(s\); drop or fill those rows"):
            est.fit(df)


def _xml_frame(spark, vectors, labels):
    from pyspark.sql import types as T

    return _frame(spark, list(zip(vectors, labels)),
                  T.StructField("labels", T.ArrayType(T.IntegerType())))


PFX = dict(numTrees=1, numWorkers=1, maxLeaf=2)


@pytest.mark.parametrize("vectors, labels, message", [
    ([Vectors.dense([1.0, 2.0])], [[0, 1]],
     r"PfastreXML needs at least 3 training rows \(its label propensities use ln\(rows\) - 1 "
     r"> 0\); the DataFrame has 1"),
    ([Vectors.dense([])] * 4, [[0], [1], [0], [1]],
     r"featuresCol: column 'features' holds vectors of size 0: PfastreXML needs at least one "
     r"feature"),
    ([Vectors.sparse(WIDE, [i], [1.0]) for i in range(4)], [[0], [1], [0], [1]],
     rf"featuresCol: column 'features' holds vectors of size {WIDE}: one workspace slot a "
     rf"feature make {WIDE} values, above the limit of 268435456"),
    ([Vectors.dense([1.0, float(i)]) for i in range(4)], [[0], [1], [0], [10**9]],
     r"labelsCol: column 'labels' holds the label id 1000000000: the label space is taken as "
     r"the largest id \+ 1 = 1000000001 labels, above the limit of 268435456 .*remap the "
     r"label ids to 0..L-1"),
], ids=["single-row", "size0", "wide", "label1e9"])
def test_pfastrexml_sizes_refused_on_the_driver(spark, vectors, labels, message):
    """Before: 'propensities not finite' from a worker (one row), a model trained on no
    feature (size 0), a memory error that never named the width, and a 45 GB memory need
    for one label id of 10**9."""
    with pytest.raises(ValueError, match=message):
        PfastreXML(**PFX).fit(_xml_frame(spark, vectors, labels))


def test_label_space_hint_in_the_memory_error():
    from sparkxml.fastxml.fit import label_space_hint

    stats = {"rows": 4, "nnz_x": 8, "nnz_y": 4, "n_features": 2, "n_labels": 10**8 + 1}
    assert "largest label id + 1 = 100000001 labels; remap" in label_space_hint(stats, 2 * 10**9)
    assert label_space_hint(dict(stats, n_labels=5), 10**6) == ""


@pytest.mark.parametrize("master", ["local[0]", "local[-1]", "local[x]", "local[2,0]"])
def test_cli_bad_local_master_is_one_line(tmp_path, capsys, master):
    """Before: a Python traceback from the JVM ('Asked to run locally with 0 threads')."""
    data = tmp_path / "d.txt"
    data.write_text("1 1:0.5\n")
    rc = cli.main(["--master", master, "gbt", "train", "--data", str(data), "--model",
                   str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith(f"sparkxml: error: master '{master}': local[N")


def test_cli_workers_without_sparkxml_is_one_line(tmp_path, capsys, monkeypatch):
    """The fit's one-line RuntimeError (tests/spark/test_core_errors.py) reaches the CLI
    user as one 'sparkxml: error:' line, not a traceback."""
    from sparkxml.cli import boost

    line = ("Spark's Python workers cannot import sparkxml: they run PYSPARK_PYTHON=python3; "
            "set PYSPARK_PYTHON to the Python that has sparkxml installed")

    def fail(spark, args):
        raise RuntimeError(line)

    monkeypatch.setattr(boost, "cmd_train", fail)
    monkeypatch.setattr(session, "get_session", lambda **kw: None)
    data = tmp_path / "d.txt"
    data.write_text("1 1:0.5\n")
    rc = cli.main(["gbt", "train", "--data", str(data), "--model", str(tmp_path / "m")])
    assert rc == 2 and capsys.readouterr().err == f"sparkxml: error: {line}\n"
