"""RandomForestClassifier(rowIndexCol=...): scikit-learn's forest replayed node for node,
the same for any numWorkers and partitioning, saved and served; bad input."""

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

import sparkxml_kernels
from sparkxml import RandomForestClassifier
from sparkxml.forest.forest import RandomForestClassificationModel

sklearn = pytest.importorskip("sklearn")
from _data import data_path  # noqa: E402
from _tree_frames import FIELDS  # noqa: E402
from sklearn.datasets import load_digits, load_svmlight_file  # noqa: E402
from sklearn.ensemble import RandomForestClassifier as SkForest  # noqa: E402


def _indexed(spark, X, y, w=None, parts=3, seed=0):
    """(id, features, label[, weight]) rows in a shuffled order over ``parts`` partitions: the
    Spark order is not the index order."""
    order = np.random.default_rng(seed).permutation(len(y))
    rows = [(int(i), Vectors.dense(X[i].tolist()), float(y[i]))
            + (() if w is None else (float(w[i]),)) for i in order]
    cols = ["id", "features", "label"] + ([] if w is None else ["weight"])
    return spark.createDataFrame(rows, cols).repartition(parts).cache()


def _same_forest(model, sk):
    assert model.getNumTrees == len(sk.estimators_)
    for t, est in enumerate(sk.estimators_):
        ours, theirs = model.treeArrays(t), est.tree_
        for f in FIELDS:
            np.testing.assert_array_equal(ours[f], getattr(theirs, f), err_msg=f"tree {t} {f}")
        inner = theirs.children_left >= 0
        np.testing.assert_array_equal(ours["missing_go_to_left"][inner],
                                      theirs.missing_go_to_left[inner])


@pytest.fixture(scope="module")
def digits_nan(spark):
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float64)
    X[:, :16][np.random.default_rng(1).random((len(y), 16)) < 0.1] = np.nan
    return X, y, _indexed(spark, X, y)


def test_balanced_subsample_forest_is_sklearns_any_workers(digits_nan, tmp_path):
    X, y, df = digits_nan
    kw = dict(numTrees=4, seed=0, rowIndexCol="id", classWeight="balanced_subsample",
              maxDepth=64, oobScore=True)
    model = RandomForestClassifier(numWorkers=2, **kw).fit(df)
    sk = SkForest(n_estimators=4, class_weight="balanced_subsample", random_state=0,
                  oob_score=True).fit(X, y)
    _same_forest(model, sk)
    assert model.outOfBagScore == sk.oob_score_
    assert [i["trees"] for i in model.summary.workerInfo] == [2, 2]
    np.testing.assert_allclose(model.predictor.predict_values(X), sk.predict_proba(X),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(model.featureImportances.toArray(), sk.feature_importances_,
                               rtol=1e-12, atol=1e-15)
    again = RandomForestClassifier(numWorkers=1, **kw).fit(df.repartition(5))
    a, b = model.predictor.to_arrays(), again.predictor.to_arrays()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert again.outOfBagScore == model.outOfBagScore
    path = str(tmp_path / "replayed")
    model.save(path)
    loaded = RandomForestClassificationModel.load(path)
    assert loaded.getRowIndexCol() == "id"
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict_values(X[:100]),
                                  model.predictor.predict_values(X[:100]))
    out = loaded.transform(df).orderBy("id").select("prediction").collect()
    np.testing.assert_array_equal([r.prediction for r in out], sk.predict(X))


@pytest.mark.parametrize("kw, sk_kw, weighted", [
    (dict(classWeight={0: 2.0, 3: 0.5}, maxDepth=64), dict(class_weight={0: 2.0, 3: 0.5}),
     True),
    (dict(classWeight="balanced", maxDepth=64), dict(class_weight="balanced"), True),
    (dict(bootstrap=False, criterion="entropy", maxDepth=6, minInstancesPerNode=3),
     dict(bootstrap=False, criterion="entropy", max_depth=6, min_samples_leaf=3), False),
    (dict(subsamplingRate=0.5, maxLeafNodes=40, ccpAlpha=0.002, maxDepth=64),
     dict(max_samples=0.5, max_leaf_nodes=40, ccp_alpha=0.002), False),
])
def test_forest_options_are_sklearns(spark, digits_nan, kw, sk_kw, weighted):
    """Sample weights (scikit-learn 1.9 draws bootstrap samples with them, and counts
    'balanced' classes by them), class weights, no bootstrap, max_samples, best-first growth
    and pruning."""
    X, y, df = digits_nan
    w = None
    if weighted:
        w = np.random.default_rng(2).integers(1, 4, len(y)).astype(np.float64)
        df = _indexed(spark, X, y, w)
    model = RandomForestClassifier(numTrees=3, seed=7, rowIndexCol="id", numWorkers=2,
                                   weightCol="weight" if weighted else None, **kw).fit(df)
    sk = SkForest(n_estimators=3, random_state=7, **sk_kw).fit(X, y, sample_weight=w)
    _same_forest(model, sk)


@pytest.fixture(scope="module")
def pendigits(spark):
    X, y = load_svmlight_file(data_path("pendigits", "pendigits"), n_features=16)
    X, y = X.toarray(), y - 1
    return X, y, _indexed(spark, X, y, parts=4)


@pytest.mark.parametrize("crit", ["gini", "entropy"])
def test_balanced_subsample_on_pendigits_node_for_node(pendigits, crit):
    X, y, df = pendigits
    model = RandomForestClassifier(numTrees=10, seed=0, maxDepth=64, criterion=crit,
                                   classWeight="balanced_subsample", rowIndexCol="id",
                                   numWorkers=2).fit(df)
    sk = SkForest(n_estimators=10, criterion=crit, class_weight="balanced_subsample",
                  random_state=0).fit(X, y)
    _same_forest(model, sk)
    assert max(e.tree_.max_depth for e in sk.estimators_) > 12


def test_bad_row_index_fails_before_training(spark):
    rows = [(i % 3 if i < 5 else i, Vectors.dense([float(i)]), float(i % 2)) for i in range(8)]
    df = spark.createDataFrame(rows, ["id", "features", "label"])
    est = RandomForestClassifier(numTrees=2, rowIndexCol="id", numWorkers=1)
    with pytest.raises(ValueError, match="rowIndexCol: column 'id' repeats positions"):
        est.fit(df)
    nulls = spark.createDataFrame([(None if i == 2 else i, Vectors.dense([float(i)]),
                                    float(i % 2)) for i in range(8)],
                                  StructType([StructField("id", LongType()),
                                              StructField("features", VectorUDT()),
                                              StructField("label", DoubleType())]))
    with pytest.raises(ValueError, match="column 'id' holds 1 null values"):
        est.fit(nulls)
    with pytest.raises(TypeError, match="column 'id' must be of an integer type, got double"):
        est.fit(df.selectExpr("cast(id as double) as id", "features", "label"))
    with pytest.raises(ValueError, match="column 'nope' is not in the DataFrame"):
        est.copy({est.rowIndexCol: "nope"}).fit(df)
    for bad, match in ((dict(oobScore=True, bootstrap=False), "oobScore=True needs bootstrap"),
                       (dict(monotonicConstraints=[1]), "monotonicConstraints is not")):
        with pytest.raises(ValueError, match=match):
            RandomForestClassifier(numTrees=2, rowIndexCol="id", **bad).fit(df)


def test_feature_columns_with_nulls_are_sklearns_missing_values(spark):
    """featuresCols with null entries: missing values, as NaN is to scikit-learn."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 1)
    X[rng.random(X.shape) < 0.15] = np.nan
    rows = [(int(i),) + tuple(None if np.isnan(v) else float(v) for v in X[i]) + (float(y[i]),)
            for i in rng.permutation(300)]
    df = spark.createDataFrame(rows, "id int, a double, b double, c double, label double")
    model = RandomForestClassifier(featuresCols=["a", "b", "c"], numTrees=3, seed=11,
                                   maxDepth=64, rowIndexCol="id", numWorkers=2).fit(df)
    _same_forest(model, SkForest(n_estimators=3, random_state=11).fit(X, y))


def test_memory_check_names_the_figures():
    """A task that cannot hold every row dense is refused before the training job."""
    from sparkxml.forest.replay import check_replay_memory

    class Conf:
        def __init__(self, values):
            self.values = values

        def get(self, key, default=None):
            return self.values.get(key, default)

    class Session:
        conf = Conf({"spark.executor.pyspark.memory": "4g", "spark.master": "spark://x:7077"})

    check_replay_memory(Session(), 1000, 64, 2)  # 1.6 MB
    with pytest.raises(MemoryError, match=r"rowIndexCol: each training task holds every row "
                                          r"dense \(10000000 rows x 64 features\)"):
        check_replay_memory(Session(), 10_000_000, 64, 2)
