"""Which evaluation metrics apply to GBTClassifier and LambdaMART (``evalMetric`` and
``evalMetrics``, XGBoost's names), and what ``evaluate`` reports by default for each model
kind. The regressor's rules live with its objectives (``objective_params``)."""
from __future__ import annotations

from sparkxml_kernels.gbt.classification_metrics import is_classification_metric
from sparkxml_kernels.gbt.ranking import parse_metric

BINARY_METRICS = ("logloss", "error", "auc", "aucpr")  # and error@t
MULTI_METRICS = ("mlogloss", "merror")
# what evaluate reports besides the metrics the model was trained with
BINARY_DEFAULTS = BINARY_METRICS
RANKING_DEFAULTS = ("ndcg@10", "map@10")


def _binary_ok(m: str) -> bool:
    return m in BINARY_METRICS or (m.startswith("error@") and is_classification_metric(m))


def check_classification_metric(m: str, k: int) -> None:
    """``m`` applies to a classifier of ``k`` classes, or ValueError naming it."""
    ok = _binary_ok(m) if k == 2 else m in MULTI_METRICS
    if not ok:
        allowed = list(BINARY_METRICS) + ["error@t"] if k == 2 else list(MULTI_METRICS)
        raise ValueError(f"evalMetric '{m}' does not apply to {k} classes; use one of "
                         f"{allowed}")


def _no_duplicates(names) -> None:
    if len(set(names)) != len(names):
        raise ValueError(f"evalMetrics: {list(names)} names a metric twice")


def classification_metrics(est, k: int):
    """``(metric early stopping watches or None, evalMetrics or None)`` of a GBTClassifier
    fit with ``k`` classes: ``evalMetric`` when set, else the first of ``evalMetrics``."""
    metric = est._opt(est.evalMetric)
    names = list(est._opt(est.evalMetrics) or []) or None
    for m in ([metric] if metric else []) + (names or []):
        check_classification_metric(m, k)
    if names:
        _no_duplicates(names)
    return metric or (names[0] if names else None), names


def ranking_metric_name(m: str) -> str:
    """``ndcg@k`` / ``map@k`` (bare ``ndcg`` / ``map`` = @10), or ValueError naming ``m``."""
    parsed = parse_metric(m)
    if parsed is None:
        raise ValueError(f"LambdaMART: param evalMetric={m!r} is invalid: use 'ndcg@k' or "
                         f"'map@k' (k >= 1)")
    return f"{parsed[0]}@{parsed[1]}"


def ranking_metrics(est):
    """``(metric early stopping watches, evalMetrics or None)`` of a LambdaMART fit:
    ``evalMetric`` when set, else the first of ``evalMetrics``, else ``ndcg@10``."""
    names = [ranking_metric_name(m) for m in (est._opt(est.evalMetrics) or [])] or None
    if names:
        _no_duplicates(names)
    if est.isSet(est.evalMetric) or not names:
        return ranking_metric_name(est.getOrDefault(est.evalMetric)), names
    return names[0], names


def evaluation_metrics(trained, defaults) -> list:
    """The metrics ``evaluate`` reports: ``defaults`` then the ones the model recorded in
    training (``summary.metricHistory``), each once."""
    out = []
    for m in list(defaults) + list(trained or []):
        # a custom metric's function stays with the estimator: not computable here
        if m and m not in out and not m.startswith("custom:"):
            out.append(m)
    return out
