"""The classification and ranking metrics of ``sparkxml_kernels.gbt.metrics`` against
XGBoost's on the same margins (an XGBoost model of 0 rounds started from them), with and
without weights; aucpr's bucketed value against its sorting reference."""
import numpy as np
import pytest

from sparkxml_kernels.gbt import ranking as R
from sparkxml_kernels.gbt.classification_metrics import aucpr_exact, pr_area
from sparkxml_kernels.gbt.metrics import is_known, metric_from_stats, metric_stats

xgb = pytest.importorskip("xgboost")


def _xgb(metrics, y, margin, objective, w=None, qid=None, **params):
    d = xgb.DMatrix(np.zeros((y.size, 1)), label=y, weight=w, base_margin=margin, qid=qid)
    out = xgb.train(dict(objective=objective, eval_metric=metrics, **params), d, 0).eval(d)
    return {kv.split(":")[0][len("eval-"):]: float(kv.split(":")[1])
            for kv in out.split("\t")[1:]}


def _ours(name, y, raw, w=None, gp=None):
    return metric_from_stats(name, metric_stats(name, y, raw, w, gp))


@pytest.mark.parametrize("weighted", [False, True])
def test_binary_metrics_as_xgboost(weighted):
    rng = np.random.default_rng(0)
    n = 300
    y = (rng.random(n) < 0.4).astype(float)
    m = rng.normal(size=n) + y
    w = rng.uniform(0.5, 2.0, n) if weighted else None
    names = ["logloss", "error", "error@0.7", "error@0.2", "auc", "aucpr"]
    ref = _xgb(names, y, m, "binary:logistic", w)
    for name in names:
        assert _ours(name, y, m, w) == pytest.approx(ref[name], abs=1e-6), name
    assert aucpr_exact(y, m, w) == pytest.approx(ref["aucpr"], abs=1e-7)


def test_multiclass_metrics_as_xgboost():
    rng = np.random.default_rng(1)
    n = 200
    y = rng.integers(0, 3, n).astype(float)
    m = rng.normal(size=(n, 3))
    m[np.arange(n), y.astype(int)] += 0.5
    w = rng.uniform(0.5, 2.0, n)
    ref = _xgb(["merror", "mlogloss"], y, m, "multi:softprob", w, num_class=3)
    for name in ("merror", "mlogloss"):
        assert _ours(name, y, m, w) == pytest.approx(ref[name], abs=1e-6), name


def test_ranking_metrics_as_xgboost():
    rng = np.random.default_rng(2)
    sizes = rng.integers(3, 15, size=12)
    qid = np.repeat(np.arange(12), sizes)
    gp = np.concatenate(([0], np.cumsum(sizes)))
    y = rng.integers(0, 4, size=qid.size).astype(float)
    y[qid == 3] = 0  # a query without relevant documents counts 1, as XGBoost's
    m = rng.normal(size=qid.size)  # distinct scores: no tie order to agree on
    ref = _xgb(["ndcg@3", "ndcg@5", "ndcg@10"], y, m, "rank:ndcg", qid=qid)
    for name in ("ndcg@3", "ndcg@5", "ndcg@10"):
        assert _ours(R.configure_metric(name), y, m, gp=gp) == pytest.approx(ref[name],
                                                                              abs=1e-9)
    yb = (y > 1).astype(float)  # XGBoost's map takes binary labels
    ref = _xgb(["map@3", "map@5"], yb, m, "rank:map", qid=qid)
    for name in ("map@3", "map@5"):
        assert _ours(R.configure_metric(name), yb, m, gp=gp) == pytest.approx(ref[name],
                                                                               abs=1e-9)


def test_aucpr_edge_cases_and_names():
    # all positives ranked first: precision 1 at every recall
    assert pr_area([1.0, 1.0, 0.0], [0.0, 0.0, 2.0]) == pytest.approx(1.0)
    assert np.isnan(pr_area([1.0, 2.0], [0.0, 0.0]))  # no negatives
    # one tie group of everything: the line from (0, 0) to (P, N)
    y = np.array([1.0, 0.0, 1.0, 0.0])
    assert aucpr_exact(y, np.zeros(4)) == pytest.approx(0.5)
    assert _ours("aucpr", y, np.zeros(4)) == pytest.approx(0.5)
    for good in ("aucpr", "merror", "error@0.3"):
        assert is_known(good)
    for bad in ("error@1", "error@x", "aucpr@2", "merror@0.5"):
        assert not is_known(bad)
