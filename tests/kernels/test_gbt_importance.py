"""Importance types: the vectorised scores against their naive twin and against XGBoost's
``get_score`` on the same model exported as XGBoost JSON."""
import numpy as np
import pytest

from sparkxml_kernels.binning import bin_data, edges_from_sketch, sketch
from sparkxml_kernels.gbt import booster
from sparkxml_kernels.gbt.importance import (
    IMPORTANCE_TYPES,
    importance_scores,
    importance_scores_naive,
)


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    y = (Z[:, 0] + Z[:, 1] * Z[:, 2] + 0.3 * rng.standard_normal(1500) > 0).astype(float)
    edges = edges_from_sketch(sketch(X, None, 64), 64)
    pred, _ = booster.train(bin_data(X, edges), y, None, edges,
                            dict(maxIter=6, maxDepth=4, stepSize=0.3, objective="logistic"))
    return pred


def _scores(pred, t):
    s, used = importance_scores(pred.feature, pred.left, pred.gain, pred.cover,
                                pred.n_features, t)
    return {int(f): float(s[f]) for f in np.flatnonzero(used)}


@pytest.mark.parametrize("t", IMPORTANCE_TYPES)
def test_matches_naive(model, t):
    ours = _scores(model, t)
    ref = importance_scores_naive([model.tree(i) for i in range(model.n_trees)],
                                  model.n_features, t)
    assert ours.keys() == ref.keys() and len(ours) >= 3
    for f in ours:
        assert ours[f] == pytest.approx(ref[f], rel=1e-12)


def test_definitions_relate(model):
    w, g, tg = (_scores(model, t) for t in ("weight", "gain", "total_gain"))
    for f in w:
        assert g[f] * w[f] == pytest.approx(tg[f])
    assert sum(w.values()) == (model.left >= 0).sum()
    assert _scores(model, "split") == w
    with pytest.raises(ValueError, match="importanceType must be one of"):
        _scores(model, "total")


@pytest.mark.parametrize("t", IMPORTANCE_TYPES)
def test_matches_xgboost_get_score(model, t, tmp_path):
    xgb = pytest.importorskip("xgboost")
    from sparkxml_kernels.export import export_model

    path = str(tmp_path / "m.json")
    export_model(model, path, "xgboost-json")
    theirs = xgb.Booster(model_file=path).get_score(importance_type=t)
    ours = {f"f{f}": v for f, v in _scores(model, t).items()}
    assert ours.keys() == theirs.keys()
    for f in ours:  # XGBoost stores gains and covers as float32
        assert ours[f] == pytest.approx(theirs[f], rel=1e-6)
