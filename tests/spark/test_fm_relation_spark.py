"""FMRegressor / FMClassifier with relation blocks on local Spark: the same predictions as the
flat encoding, numWorkers invariance, a DataFrame block, persistence and input errors."""
import numpy as np
import pytest
import scipy.sparse as sp
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import FMClassifier, FMRegressor
from sparkxml.datasets import from_csr
from sparkxml.fm.fm import FMRegressionModel
from sparkxml_kernels.fm.relation import RelationBlock, expand_relations

PARAMS = dict(factorSize=2, maxIter=10, burnIn=2, seed=1)


@pytest.fixture(scope="module")
def rel(spark):
    rng = np.random.default_rng(0)
    n, nu, ni = 500, 25, 15
    users = sp.hstack([sp.eye(nu), sp.csr_matrix(rng.normal(size=(nu, 1)))]).tocsr()
    items = sp.eye(ni, format="csr")
    u, i = rng.integers(0, nu, n), rng.integers(0, ni, n)
    y = 0.1 * (u % 5) - 0.2 * (i % 3) + 0.5 * users[u, nu].toarray()[:, 0] \
        + rng.normal(0, 0.2, n)
    df = spark.createDataFrame([(int(u[r]), int(i[r]), float(y[r])) for r in range(n)],
                               ["userIdx", "itemIdx", "label"])
    item_df = spark.createDataFrame([(b, Vectors.sparse(ni, [b], [1.0])) for b in range(ni)],
                                    ["index", "features"])
    blocks = [RelationBlock.from_matrix(users, "userIdx"), RelationBlock.from_matrix(items)]
    ip, ix, dv, d = expand_relations(np.zeros(n + 1, np.int64), np.zeros(0, np.int32),
                                     np.zeros(0), 0, blocks, np.vstack([u, i]))
    flat = from_csr(spark, ip, ix, dv, d, columns={"label": y})
    return df, users, item_df, flat, sp.csr_matrix((dv, ix, ip), shape=(n, d)), y


def _pred(model, df, col="prediction"):
    return np.array([r[0] for r in model.transform(df).select(col).collect()])


def test_relation_fit_matches_flat_encoding(rel, tmp_path):
    df, users, item_df, flat, X, y = rel
    fm = FMRegressor(relationCols=["userIdx", "itemIdx"], relationBlocks=[users, item_df],
                     numWorkers=1, **PARAMS)
    model = fm.fit(df)
    assert model.numFeatures == X.shape[1] == 26 + 15
    ref = FMRegressor(numWorkers=1, **PARAMS).fit(flat)
    p = _pred(model, flat)
    # other content keys, so other row blocks: the sums' rounding only
    np.testing.assert_allclose(p, _pred(ref, flat), rtol=1e-5, atol=1e-6)
    two = FMRegressor(relationCols=["userIdx", "itemIdx"], relationBlocks=[users, item_df],
                      numWorkers=2, **PARAMS).fit(df)
    np.testing.assert_array_equal(_pred(two, flat), p)  # bit for bit
    path = str(tmp_path / "fm_rel")
    model.write().save(path)
    np.testing.assert_array_equal(_pred(FMRegressionModel.load(path), flat), p)
    np.testing.assert_allclose(sparkxml_kernels.load_model(path).predict(X), p, rtol=0,
                               atol=1e-12)


def test_relation_classifier_with_flat_features(rel):
    df, users, item_df, flat, X, y = rel
    yb = (y > np.median(y)).astype(float)
    spark = df.sparkSession
    rows = [(int(r["userIdx"]), int(r["itemIdx"]), Vectors.dense([0.5 * (k % 2)]),
             float(yb[k])) for k, r in enumerate(df.collect())]
    both = spark.createDataFrame(rows, ["userIdx", "itemIdx", "features", "label"])
    model = FMClassifier(relationCols=["userIdx", "itemIdx"], relationBlocks=[users, item_df],
                         numWorkers=1, **PARAMS).fit(both)
    Xf = sp.hstack([sp.csr_matrix(np.array([[0.5 * (k % 2)] for k in range(len(yb))])),
                    X]).tocsr()
    p = model._predictor.predict_csr(Xf.indptr, Xf.indices, Xf.data)[1]
    assert model.numFeatures == 1 + 41
    assert np.mean((p > 0.5) == (yb > 0.5)) > 0.7


def test_relation_input_errors(rel):
    df, users, item_df, flat, X, y = rel
    small = sp.eye(10, format="csr")  # userIdx goes up to 24
    with pytest.raises(ValueError, match=r"column 'userIdx' holds the index 2\d; "
                                         r"relationBlocks\[0\] has 10 rows"):
        FMRegressor(relationCols=["userIdx", "itemIdx"], relationBlocks=[small, item_df],
                    **PARAMS).fit(df)
    with pytest.raises(ValueError, match="relationCols has 2 column.*relationBlocks 1"):
        FMRegressor(relationCols=["userIdx", "itemIdx"], relationBlocks=[users],
                    **PARAMS).fit(df)
    with pytest.raises(ValueError, match="relationCols needs solver 'mcmc'"):
        FMRegressor(relationCols=["userIdx"], relationBlocks=[users], solver="als",
                    **PARAMS).fit(df)
    with pytest.raises(ValueError, match="relationCols and relationBlocks go together"):
        FMRegressor(relationBlocks=[users], **PARAMS).fit(df)
    with pytest.raises(TypeError, match="relationBlocks holds blocks, which cannot be saved"):
        FMRegressor(relationCols=["userIdx"], relationBlocks=[users]).write()
    with pytest.raises(TypeError, match=r"relationBlocks\[0\] must be a DataFrame"):
        FMRegressor(relationCols=["userIdx"], relationBlocks=["users.npz"])
    with pytest.raises(TypeError, match="relationCols: column 'label' must be an integer"):
        FMRegressor(relationCols=["label"], relationBlocks=[users], **PARAMS).fit(df)


def test_relation_ordinal_fit_and_outputs(rel):
    """Ordered probit (loss="ordinal") over relation blocks through Spark: class
    probabilities, the expected label, and the same model for 1 and 2 workers. (Against the
    flat encoding the chain differs here: the latent draws are keyed by row content, which
    differs between the two DataFrames; the kernel test compares them on the same rows.)"""
    df, users, item_df, flat, X, y = rel
    levels = np.digitize(y, np.quantile(y, [0.25, 0.5, 0.75])) + 1  # ratings 1..4
    spark = df.sparkSession
    df4 = spark.createDataFrame([(int(r["userIdx"]), int(r["itemIdx"]), int(levels[k]))
                                 for k, r in enumerate(df.collect())],
                                ["userIdx", "itemIdx", "label"])
    flat4 = from_csr(spark, X.indptr, X.indices, X.data, X.shape[1],
                     columns={"label": levels.astype(float)})
    kw = dict(loss="ordinal", relationCols=["userIdx", "itemIdx"],
              relationBlocks=[users, item_df], **PARAMS)
    model = FMRegressor(numWorkers=1, **kw).fit(df4)
    assert model.classes == [1.0, 2.0, 3.0, 4.0] and len(model.cutpoints) == 3
    proba = _pred(model, flat4, "probability")  # (n, 4)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(_pred(model, flat4), proba @ np.arange(1.0, 5.0), atol=1e-9)
    assert np.mean(np.argmax(proba, axis=1) + 1 == levels) > 0.4  # 4 classes: 0.25 by chance
    two = FMRegressor(numWorkers=2, **kw).fit(df4)
    np.testing.assert_array_equal(_pred(two, flat4), _pred(model, flat4))
