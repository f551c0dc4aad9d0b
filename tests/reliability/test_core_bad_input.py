"""Bad training input that used to crash a worker, train a NaN model or surface as a JVM
error: now a ValueError on the driver, naming the column and the value, before training."""
import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkxml import GBTClassifier, GBTRegressor, LambdaMART


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    return [Vectors.dense(x) for x in X]


def _df(spark, rows, labels, qid=None):
    data = [(v, float(y)) + (() if qid is None else (int(q),))
            for v, y, q in zip(rows, labels, qid if qid is not None else [0] * len(rows))]
    return spark.createDataFrame(data, ["features", "label"] + ([] if qid is None else ["qid"]))


@pytest.mark.parametrize("big", [1e9, 2.0**40])
def test_inferred_class_count_above_the_bound_is_refused(spark, rows, big, monkeypatch):
    """Before: numClasses was inferred as label + 1; 1e9 made the worker grow to ~10 GB and
    be OOM-killed, 2**40 an 8 TiB allocation error. The refusal comes from the driver's data
    checks: neither the sketch nor the training stage is ever started."""
    import sparkxml.gbt.fit as gbt_fit

    def never(*args, **kwargs):
        raise AssertionError("reached a Spark job after the data checks")

    monkeypatch.setattr(gbt_fit, "sketch_pass", never)
    monkeypatch.setattr(gbt_fit, "run_barrier_training", never)
    df = _df(spark, rows, [0, 1] * 29 + [1, big])
    with pytest.raises(ValueError, match=r"labelCol: column 'label' holds the label "
                                         r".*numClasses would be \d+, above the limit of "
                                         r"10000 classes"):
        GBTClassifier(maxIter=2, numWorkers=1).fit(df)


def test_inferred_class_count_far_above_the_distinct_labels_is_refused(spark, rows):
    df = _df(spark, rows, [0, 1] * 29 + [1, 500])
    with pytest.raises(ValueError, match=r"holds the label 500.0, so numClasses would be 501, "
                                         r"but only about 3 distinct labels occur"):
        GBTClassifier(maxIter=2, numWorkers=1).fit(df)


def test_explicit_class_count_is_bounded():
    with pytest.raises(ValueError, match="numClasses"):
        GBTClassifier(numClasses=10**9)._validate_params()


def test_a_few_missing_classes_still_train(spark, rows):
    labels = [0, 1, 3] * 20  # class 2 absent: 4 classes inferred, as before
    model = GBTClassifier(maxIter=2, maxDepth=2, numWorkers=1).fit(_df(spark, rows, labels))
    assert model.numClasses == 4


def test_null_feature_vector_is_named(spark, rows):
    """Before: a JVM FAILED_EXECUTE_UDF error from vector_to_array."""
    data = [(v, 1.0) for v in rows[:10]] + [(None, 0.0)]
    df = spark.createDataFrame(data, ["features", "label"])
    for est in (GBTRegressor(maxIter=2, numWorkers=1), GBTClassifier(maxIter=2, numWorkers=1)):
        with pytest.raises(ValueError, match=r"featuresCol: column 'features' has 1 null "
                                             r"vector"):
            est.fit(df)


def test_lambdamart_grade_beyond_the_default_gain_is_refused(spark, rows):
    """Before: grade 1024 made 2^grade - 1 overflow and the model predicted only NaN."""
    labels = [i % 3 for i in range(60)]
    labels[3] = 1024
    df = _df(spark, rows, labels, qid=[i // 10 for i in range(60)])
    with pytest.raises(ValueError, match=r"labelCol: column 'label' holds the grade 1024.0; "
                                         r"the default gain 2\^rel - 1 takes grades 0..31"):
        LambdaMART(maxIter=2, numWorkers=1).fit(df)
    # with a labelGain that covers it, the grade is fine and the model is finite
    gain = [0.0, 1.0, 3.0] + [7.0] * 1022
    model = LambdaMART(maxIter=2, numWorkers=1, labelGain=gain).fit(df)
    pred = np.array([r[0] for r in model.transform(df).select("prediction").collect()])
    assert np.isfinite(pred).all()


def test_gains_that_overflow_never_make_a_nan_model():
    """Gains whose differences overflow float64 make the lambdas infinite: training fails
    naming the cause instead of returning a model that predicts NaN (the engine checks every
    tree's leaves; a saved model with a NaN leaf does not load either)."""
    from sparkxml_kernels import binning
    from sparkxml_kernels.gbt import booster, ranking

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = np.arange(60) % 3
    edges = binning.edges_from_sketch(binning.sketch(X, np.ones(60), 16), 16)
    objective = ranking.configure_objective("lambdarank", 30, [-1.7e308, 0.0, 1.7e308])
    with pytest.raises(ValueError, match=r"round 0: objective .* produced non-finite leaf "
                                         r"values"):
        booster.train(binning.bin_data(X, edges), y, None, edges,
                      {"objective": objective, "maxIter": 2, "maxDepth": 2, "maxBins": 16},
                      group_ptr=np.arange(0, 61, 10))
