"""``sparkxml_kernels.load_model``: one predictor API, equal to ``transform`` bit for bit for
every model kind, on numpy, scipy.sparse and pandas inputs; input errors named."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _data import data_path
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import (
    DecisionTreeClassifier,
    FastXML,
    FFMClassifier,
    FFMRegressor,
    FMClassifier,
    FMRegressor,
    GBFMRegressor,
    GBTClassifier,
    GBTRegressor,
    LambdaMART,
    LinearSVC,
    PfastreXML,
    RandomForestRegressor,
)
from sparkxml.datasets import read_xc
from sparkxml.synthetic import csr_rows, make_multilabel, rows_frame
from sparkxml_kernels import formats

D = 6
COLS = [f"c{j}" for j in range(D)]


@pytest.fixture(scope="module")
def tab(spark):
    """300 rows: a dense ``features`` vector, the same values in columns c0..c5 with some
    NaN in c4 (for the trees' missing values), a binary, a 3-class and a real label, qid."""
    rng = np.random.default_rng(0)
    n = 300
    X = np.round(rng.normal(size=(n, D)), 3)
    X[rng.random((n, D)) < 0.2] = 0.0
    Xn = X.copy()
    Xn[rng.random(n) < 0.15, 4] = np.nan
    yb = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(float)
    ym = np.digitize(X[:, 0] + 0.5 * X[:, 3], [-0.5, 0.5]).astype(float)
    yr = X[:, 0] * 2 + np.sin(X[:, 1]) + 0.1 * rng.normal(size=n)
    rows = [(Vectors.dense(X[i]), *[float(v) for v in Xn[i]], float(yb[i]), float(ym[i]),
             float(yr[i]), int(i // 10)) for i in range(n)]
    df = spark.createDataFrame(rows, ["features", *COLS, "label", "multi", "y", "qid"])
    return X, Xn, df.cache()


def _col(df, name):
    """A transform output column as numpy (vectors as rows of a matrix)."""
    vals = [r[0] for r in df.select(name).collect()]
    if vals and hasattr(vals[0], "toArray"):
        return np.array([v.toArray() for v in vals])
    return np.array(vals, np.float64)


def _served(model, tmp_path):
    path = str(tmp_path / "m")
    model.write().save(path)
    return sparkxml_kernels.load_model(path)


def _inputs(X, columns=None):
    """The same rows as numpy, a pandas DataFrame (by ``columns``, else one array per row in
    a ``features`` column) and, without NaN, scipy CSR."""
    out = {"numpy": X, "pandas": pd.DataFrame(X, columns=columns) if columns else
           pd.DataFrame({"features": list(X)})}
    if not np.isnan(X).any():
        out["csr"] = sp.csr_matrix(X)
    return out


def _check_all(served, X, want, method="predict", columns=None):
    for form, x in _inputs(X, columns).items():
        got = getattr(served, method)(x)
        assert got.dtype == np.float64, (form, got.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{method} on {form} input")


# ------------------------------------------------------------------------ tabular models
CLASSIFIERS = {
    "gbt-binary-columns": lambda: GBTClassifier(featuresCols=COLS, maxIter=8, maxDepth=3,
                                                numWorkers=2, seed=1),
    "gbt-multiclass": lambda: GBTClassifier(labelCol="multi", maxIter=6, maxDepth=3,
                                            numWorkers=2, seed=1, thresholds=[0.5, 0.3, 0.2]),
    "tree-classifier": lambda: DecisionTreeClassifier(labelCol="multi", maxDepth=4),
    "fm-classifier": lambda: FMClassifier(maxIter=10, burnIn=2, factorSize=3, seed=3,
                                          numWorkers=1),
    "ffm-classifier": lambda: FFMClassifier(fieldStarts=[0, 2, 4], maxIter=3, numWorkers=1),
}
REGRESSORS = {
    "gbt-regressor": lambda: GBTRegressor(labelCol="y", maxIter=8, maxDepth=3, numWorkers=2,
                                          seed=1),
    "lambdamart": lambda: LambdaMART(labelCol="multi", maxIter=5, maxDepth=3, numWorkers=2,
                                     seed=1),
    "forest-regressor": lambda: RandomForestRegressor(labelCol="y", numTrees=5, maxDepth=4,
                                                      seed=2),
    "fm-regressor": lambda: FMRegressor(labelCol="y", maxIter=10, burnIn=2, factorSize=3,
                                        seed=3, numWorkers=1),
    "ffm-regressor": lambda: FFMRegressor(labelCol="y", fieldStarts=[0, 3], maxIter=3,
                                          normalize=False, numWorkers=1),
    "gbfm-regressor": lambda: GBFMRegressor(labelCol="y", fieldStarts=[0, 3], numStages=4,
                                            factorSize=2, numWorkers=1, jointIter=10,
                                            burnIn=2),
}


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_classifier_predict_and_proba_equal_transform(tab, tmp_path, name):
    X, Xn, df = tab
    model = CLASSIFIERS[name]().fit(df)
    out = model.transform(df).cache()
    served = _served(model, tmp_path)
    assert served.is_classifier
    columns = COLS if name.endswith("columns") else None
    x = Xn if columns else X
    _check_all(served, x, _col(out, "prediction"), "predict", columns)
    _check_all(served, x, _col(out, "probability"), "predict_proba", columns)


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_regressor_predict_equals_transform(tab, tmp_path, name):
    X, _, df = tab
    model = REGRESSORS[name]().fit(df)
    served = _served(model, tmp_path)
    assert not served.is_classifier and not hasattr(served, "predict_proba")
    _check_all(served, X, _col(model.transform(df), "prediction"))


@pytest.mark.parametrize("multi", [False, True])
def test_linear_svc_predict_and_raw_equal_transform(tab, tmp_path, multi):
    X, _, df = tab
    model = LinearSVC(labelCol="multi" if multi else "label", maxIter=20, numWorkers=1,
                      seed=3).fit(df)
    out = model.transform(df).cache()
    served = _served(model, tmp_path)
    assert served.is_classifier and not hasattr(served, "predict_proba")
    _check_all(served, X, _col(out, "prediction"))
    _check_all(served, X, _col(out, "rawPrediction"), "predict_raw")


def test_gbt_keeps_raw_contributions_and_leaves(tab, tmp_path):
    X, Xn, df = tab
    model = GBTClassifier(featuresCols=COLS, maxIter=4, maxDepth=3, numWorkers=2, seed=1,
                          predContribCol="shap").fit(df)
    served = _served(model, tmp_path)
    frame = pd.DataFrame(Xn, columns=COLS)[COLS[::-1]]  # read by name, not by position
    np.testing.assert_array_equal(served.predict_raw(frame), _col(model.transform(df),
                                                                  "rawPrediction")[:, 1])
    shap = np.array([r[0] for r in model.transform(df).select("shap").collect()])
    np.testing.assert_array_equal(served.predict_contributions(frame), shap)
    assert served.predict_leaf(frame).shape == (Xn.shape[0], served.n_trees)


def test_input_errors_name_the_problem(tab, tmp_path):
    X, _, df = tab
    fm = _served(FMRegressor(labelCol="y", maxIter=3, burnIn=1, factorSize=2,
                             numWorkers=1).fit(df), tmp_path)
    with pytest.raises(ValueError, match="X has 5 features; FMRegressionModel was trained on 6"):
        fm.predict(X[:, :5])
    bad = X[:3].copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"nan at row 1; FMRegressionModel takes finite"):
        fm.predict(bad)
    with pytest.raises(ValueError, match="dtype <U1; features must be numeric"):
        fm.predict(np.array([["a"] * D]))
    with pytest.raises(ValueError, match="must be 2-D.*reshape"):
        fm.predict(X[0])
    with pytest.raises(ValueError, match="column 'c1' has dtype (object|str); features must be numeric"):
        gbt = _served(GBTRegressor(labelCol="y", featuresCols=COLS, maxIter=2,
                                   numWorkers=1).fit(df), tmp_path / "g")
        gbt.predict(pd.DataFrame({c: ["x"] * 2 if c == "c1" else [1.0] * 2 for c in COLS}))
    with pytest.raises(ValueError, match=r"missing: \['c5'\]"):
        gbt.predict(pd.DataFrame({c: [1.0] for c in COLS[:5]}))
    # NaN is "missing" for the trees: accepted
    assert np.isfinite(gbt.predict(np.full((1, D), np.nan))).all()


# ------------------------------------------------------------------------ XML models
@pytest.fixture(scope="module")
def xml(spark):
    X, Y = make_multilabel(n_rows=700, n_features=300, n_labels=40, seed=5)
    train = rows_frame(spark, X, Y, 0, 500, 300).cache()
    test = rows_frame(spark, X, Y, 500, 700, 300).cache()
    (xi, xj, xv), _ = csr_rows(X, Y, 500, 700)
    return train, test, sp.csr_matrix((xv, xj, xi), shape=(200, 300))


def _topk(model, df):
    rows = model.transform(df).select("prediction", "scores").collect()
    return [list(r[0]) for r in rows], [list(r[1]) for r in rows]


@pytest.mark.parametrize("est", [FastXML, PfastreXML])
def test_xml_predict_topk_equals_transform(xml, tmp_path, est):
    train, test, Xt = xml
    model = est(numTrees=4, numWorkers=2, maxLeaf=6, seed=1).fit(train).setTopK(7)
    served = _served(model, tmp_path)
    want = _topk(model, test)
    for x in (Xt, Xt.toarray(), pd.DataFrame({"features": [Xt[i] for i in range(200)]})):
        labels, scores = served.predict_topk(x, 7)
        assert labels == want[0] and scores == want[1]
    assert served.predict(Xt) == want[0]
    assert served.predict_topk(Xt, 3)[0] == [r[:3] for r in want[0]]
    with pytest.raises(ValueError, match="takes finite values only"):
        served.predict(np.full((1, 300), np.inf))


@pytest.mark.parametrize("est", [FastXML, PfastreXML])
def test_xml_predict_topk_equals_transform_on_bibtex(spark, tmp_path, est):
    train_path = data_path("bibtex", "xc_split", "bibtex_train.txt")
    test_path = data_path("bibtex", "xc_split", "bibtex_test.txt")
    model = est(numTrees=10, numWorkers=2, rowOrder="input", seed=0).fit(
        read_xc(spark, train_path))
    served = _served(model, tmp_path)
    xi, xx, xd, _, _, d, _ = formats.read_xc(test_path)
    want = _topk(model, read_xc(spark, test_path))
    labels, scores = served.predict_topk(sp.csr_matrix((xd, xx, xi), shape=(len(xi) - 1, d)),
                                         5)
    assert labels == want[0] and scores == want[1]


# ------------------------------------------------------------------------ predict_udf
def test_predict_udf_scores_a_saved_model_in_a_spark_job(tab, xml, tmp_path):
    from pyspark.ml.functions import vector_to_array

    from sparkxml.serving import predict_udf

    _, _, df = tab
    gbt = GBTClassifier(featuresCols=COLS, maxIter=4, maxDepth=3, numWorkers=1, seed=1).fit(df)
    gbt.write().save(str(tmp_path / "gbt"))
    score = predict_udf(str(tmp_path / "gbt"))
    got = df.select(score(*COLS).alias("p"))
    want = _col(gbt.transform(df), "prediction")
    np.testing.assert_array_equal(_col(got, "p"), want)  # NaN in c4 read as missing
    train, test, _ = xml
    fx = FastXML(numTrees=3, numWorkers=1, maxLeaf=6, seed=1).fit(train)
    fx.write().save(str(tmp_path / "fx"))
    labels = [list(r[0]) for r in test.select(predict_udf(str(tmp_path / "fx"))(
        vector_to_array("features"))).collect()]
    assert labels == _topk(fx, test)[0]
    with pytest.raises(sparkxml_kernels.ModelFormatError, match="does not exist"):
        predict_udf(str(tmp_path / "nothing"))
