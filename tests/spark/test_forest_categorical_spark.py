"""Trees and forests with categorical features on local[2]: categoricalCols and nominal
metadata, the same model for any numWorkers and partitioning, save/load and the JVM-free
loader, Pipelines, and bad category ids refused before training."""
import numpy as np
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import StringIndexer, VectorAssembler, VectorIndexer
from pyspark.sql import functions as F

import sparkxml_kernels
from sparkxml import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sparkxml.forest.forest import RandomForestClassificationModel
from sparkxml_kernels.forest.tree import bitset_to_mask

K = 20


def _rows(n=1200, seed=0):
    """A 20-level category whose effect is not monotone in its id, and a numeric feature."""
    rng = np.random.default_rng(seed)
    c = np.concatenate([np.arange(K), rng.integers(0, K, n - K)])
    effect = np.sin(2.4 * np.arange(K)) * 2
    x = rng.normal(size=n)
    z = effect[c] + 0.5 * x + 0.3 * rng.normal(size=n)
    return c.astype(float), x, (z > 0).astype(float), z


@pytest.fixture(scope="module")
def cat_df(spark):
    c, x, y, z = _rows()
    return spark.createDataFrame(
        [(float(a), float(b), float(v), float(t)) for a, b, v, t in zip(c, x, y, z)],
        ["c", "x", "label", "target"]).cache()


def _arrays(model, i=0):
    return model.treeArrays(i)


def _same_trees(a, b, n=1):
    for i in range(n):
        ta, tb = _arrays(a, i), _arrays(b, i)
        assert ta.keys() == tb.keys()
        for k in ta:
            np.testing.assert_array_equal(ta[k], tb[k], err_msg=k)


def test_tree_categorical_cols_beats_ordinal_and_is_the_same_for_any_workers(cat_df, tmp_path):
    est = DecisionTreeClassifier(featuresCols=["c", "x"], categoricalCols=["c"], maxDepth=3,
                                 seed=1)
    m1 = est.copy({est.numWorkers: 1}).fit(cat_df.repartition(1))
    m2 = est.copy({est.numWorkers: 2}).fit(cat_df.repartition(3))
    _same_trees(m1, m2)
    arr = _arrays(m1)
    root_cats = arr["categories_left"][0]
    assert arr["feature"][0] == 0 and np.isnan(arr["threshold"][0]) and root_cats.any()
    # the categorical root separates the categories by the sign of their effect
    effect = np.sin(2.4 * np.arange(K))
    left = bitset_to_mask(root_cats, K)
    assert effect[left].mean() * effect[~left].mean() < 0
    acc = m1.transform(cat_df).filter("prediction = label").count() / cat_df.count()
    ordinal = DecisionTreeClassifier(featuresCols=["c", "x"], maxDepth=3, seed=1).fit(cat_df)
    acc_ord = ordinal.transform(cat_df).filter("prediction = label").count() / cat_df.count()
    assert acc > acc_ord + 0.05 and acc > 0.85
    # save / load / the JVM-free loader
    path = str(tmp_path / "dt_cat")
    m1.save(path)
    loaded = type(m1).load(path)
    _same_trees(m1, loaded)
    pdf = cat_df.toPandas()
    X = pdf[["c", "x"]].to_numpy()
    pred = [r.prediction for r in m1.transform(cat_df).select("prediction").collect()]
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict(X), pred)
    assert loaded.getCategoricalCols() == ["c"]
    with pytest.raises(ValueError, match="categorical"):
        m1.saveNativeModel(str(tmp_path / "dt.onnx"))


def test_vector_metadata_and_forests(cat_df, tmp_path):
    """VectorIndexer's nominal metadata makes the feature categorical without naming it: the
    same tree as categoricalCols on columns; forests the same for numWorkers 1 and 2."""
    vec = VectorAssembler(inputCols=["c", "x"], outputCol="raw").transform(cat_df)
    idx = VectorIndexer(inputCol="raw", outputCol="features", maxCategories=K).fit(vec)
    df = idx.transform(vec).cache()
    by_meta = DecisionTreeRegressor(labelCol="target", maxDepth=4).fit(df)
    by_name = DecisionTreeRegressor(featuresCols=["c", "x"], categoricalCols=["c"],
                                    labelCol="target", maxDepth=4).fit(cat_df)
    _same_trees(by_meta, by_name)
    rf = RandomForestClassifier(numTrees=4, maxDepth=5, seed=3, oobScore=True)
    f1 = rf.copy({rf.numWorkers: 1}).fit(df.repartition(1))
    f2 = rf.copy({rf.numWorkers: 2}).fit(df.repartition(4))
    _same_trees(f1, f2, 4)
    assert f1.outOfBagScore == f2.outOfBagScore > 0.8
    assert any(np.isnan(_arrays(f1, i)["threshold"]).any() for i in range(4))
    path = str(tmp_path / "rf_cat")
    f1.save(path)
    again = RandomForestClassificationModel.load(path)
    p1 = [r[0].toArray().tolist() for r in f1.transform(df).select("probability").collect()]
    p2 = [r[0].toArray().tolist() for r in again.transform(df).select("probability").collect()]
    assert p1 == p2
    # extra trees (their spread-independence with categories: the kernel tests)
    et = ExtraTreesRegressor(featuresCols=["c", "x"], categoricalCols=["c"], labelCol="target",
                             numTrees=3, maxDepth=5, seed=2, numWorkers=2).fit(cat_df)
    assert any(np.isnan(_arrays(et, i)["threshold"]).any() for i in range(3))


def test_pipeline_with_string_indexer(spark, tmp_path):
    rng = np.random.default_rng(4)
    names = np.array([f"city{i}" for i in range(8)])
    good = {"city1", "city4", "city6"}
    rows = [(str(s), float(v), float(s in good)) for s, v in
            zip(names[rng.integers(0, 8, 400)], rng.normal(size=400))]
    df = spark.createDataFrame(rows, ["city", "v", "label"])
    pipe = Pipeline(stages=[
        StringIndexer(inputCol="city", outputCol="city_id"),
        VectorAssembler(inputCols=["city_id", "v"], outputCol="features"),
        DecisionTreeClassifier(maxDepth=1)]).fit(df)
    assert pipe.transform(df).filter("prediction = label").count() == 400
    path = str(tmp_path / "pipe")
    pipe.write().save(path)
    again = PipelineModel.load(path)
    a = [r[0] for r in pipe.transform(df).select("prediction").collect()]
    assert a == [r[0] for r in again.transform(df).select("prediction").collect()]


@pytest.mark.parametrize("value, match", [
    (-1.0, "negative value -1.0"), (2.5, "value 2.5, not an integer"),
    (None, "missing"), (7.0, "category id 7, but its metadata declares 5")])
def test_bad_category_ids_are_refused(spark, value, match):
    rows = [(float(i % 5), float(i), float(i % 2)) for i in range(30)] + [(value, 1.0, 0.0)]
    df = spark.createDataFrame(rows, "c double, x double, label double")
    meta = {"ml_attr": {"type": "nominal", "num_vals": 5, "name": "c"}}
    df = df.withColumn("c", F.col("c").alias("c", metadata=meta))
    with pytest.raises(ValueError, match=match) as e:
        DecisionTreeClassifier(featuresCols=["c", "x"], categoricalCols=["c"]).fit(df)
    assert "'c'" in str(e.value)


def test_monotonic_constraint_on_a_categorical_feature_is_refused(cat_df):
    with pytest.raises(ValueError, match="categorical features cannot have monotonic"):
        RandomForestClassifier(featuresCols=["c", "x"], categoricalCols=["c"],
                               monotonicConstraints=[1, 0]).fit(cat_df)
    with pytest.raises(ValueError, match="20 categories, more than the 4 bins of maxBins=4"):
        DecisionTreeClassifier(featuresCols=["c", "x"], categoricalCols=["c"],
                               maxBins=4).fit(cat_df)


def test_quantile_forest_with_categorical_features(cat_df, tmp_path):
    """quantiles and categoricalCols together: the leaf samples follow the categorical
    splits (the median tracks the category effect), saved and served by the loader;
    absolute_error with a categorical feature is refused before any job."""
    est = RandomForestRegressor(featuresCols=["c", "x"], categoricalCols=["c"],
                                labelCol="target", numTrees=3, maxDepth=4, seed=2,
                                numWorkers=2, quantiles=[0.1, 0.5, 0.9])
    model = est.fit(cat_df)
    assert any(np.isnan(_arrays(model, i)["threshold"]).any() for i in range(3))
    pdf = cat_df.toPandas()
    X = pdf[["c", "x"]].to_numpy()
    rows = model.transform(cat_df).select("quantiles").collect()
    q = np.array([r[0] for r in rows])
    np.testing.assert_array_equal(q, model.predictQuantiles(X))
    assert (q[:, 0] <= q[:, 1]).all() and (q[:, 1] <= q[:, 2]).all()
    assert np.corrcoef(q[:, 1], pdf["target"])[0, 1] > 0.7
    path = str(tmp_path / "qrf_cat")
    model.save(path)
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict_quantiles(
        X, [0.1, 0.5, 0.9]), q)
    with pytest.raises(ValueError, match="categoricalCols: criterion 'absolute_error'"):
        DecisionTreeRegressor(featuresCols=["c", "x"], categoricalCols=["c"],
                              labelCol="target", criterion="absolute_error").fit(cat_df)
