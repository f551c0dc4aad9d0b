"""One predictor API over every model kind: what ``sparkxml_kernels.load_model`` returns.

A served model wraps its family's kernel predictor (``.predictor``) with what the saved
metadata says about the Spark model (its class, params such as ``thresholds``, ``missing``,
``topK``, ``featuresCol(s)``), so that its outputs are the Spark ``transform``'s, bit for bit:

======================  =========================================  ============================
model                   ``predict(X)``                             also
======================  =========================================  ============================
FastXML, PfastreXML     labels per row (lists, ``topK`` of them,   ``predict_topk(X, k)``:
                        best first; labels scoring 0 left out)     (labels, scores) lists
GBT classifier          class (float64 (n,), ``thresholds``)       ``predict_proba``,
                                                                   ``predict_raw`` (margins),
                                                                   ``predict_contributions``,
                                                                   ``predict_leaf``
GBT regressor,          value / score (float64 (n,))               ``predict_raw``,
LambdaMART                                                         ``predict_contributions``,
                                                                   ``predict_leaf``
tree / forest           class or value (float64 (n,))              ``predict_proba``
                                                                   (classifiers),
                                                                   ``predict_quantiles``
                                                                   (quantile forests)
LinearSVC               class (float64 (n,), ``threshold``)        ``predict_raw`` (Spark's
                                                                   rawPrediction)
FM, GBFM                class (p > 0.5) or value (float64 (n,))    ``predict_proba``
                                                                   (classifiers),
                                                                   ``predict_raw`` (margins)
FM, loss "ordinal"      expected label (float64 (n,))              ``predict_proba`` (n, K)
======================  =========================================  ============================

``X`` is a numpy array (n, d), a scipy.sparse matrix, a CSR tuple ``(indptr, indices, data,
d)`` or a pandas DataFrame of the training feature columns (or of the model's vector column,
one array or Spark ML Vector per row); :func:`sparkxml_kernels.inputs.model_input` reads and
checks it for every family. LinearSVC has no ``predict_proba`` (an SVM gives margins, not
probabilities: Spark ML's and scikit-learn's LinearSVC have none either). Any other member of
the family predictor (``tree(t)``, ``feature_importances``, ``n_trees``, ...) is reached
through the served model too.
"""
from __future__ import annotations

import numpy as np

from ._dtypes import VALUE
from .gbt.objectives import LOG_LINK
from .gbt.outputs import CLASSIFIER_OBJECTIVES, class_scores, predict_from_probability
from .inputs import FeatureSpec, model_input


def model_params(meta: dict) -> dict:
    """The saved model's params: its defaults overridden by those set (Spark ML metadata)."""
    out: dict = {}
    for key in ("defaultParamMap", "paramMap"):
        params = (meta or {}).get(key, {})
        if not isinstance(params, dict):
            raise ValueError(f"the metadata's {key} is not a JSON object")
        out.update(params)
    return out


class ServedModel:
    """A saved model served without Spark (see the module docstring).

    Attributes
    ----------
    predictor : object
        The family's kernel predictor.
    model_class : str
        The Spark model's class path, from the metadata.
    params : dict
        The Spark model's params when it was saved.
    spec : FeatureSpec
        What ``X`` must be (``n_features``, feature column names, vector column).
    """

    kind = ""
    is_classifier = False
    input_form = "dense"

    def __init__(self, predictor, meta: dict | None = None):
        meta = meta or {}
        self.predictor = predictor
        self.model_class = str(meta.get("class", ""))
        self.params = model_params(meta)
        name = self.model_class.rsplit(".", 1)[-1] or type(predictor).__name__
        self.spec = FeatureSpec(self._n_features(), self._feature_columns(),
                                self.params.get("featuresCol", "features"),
                                allow_nan=self._allows_nan(), model=name)

    def _n_features(self) -> int:
        return int(self.predictor.n_features)

    def _feature_columns(self):
        cols = self.params.get("featuresCols")
        return list(cols) if cols else None

    def _allows_nan(self) -> bool:
        return False

    @property
    def n_features(self) -> int:
        return self.spec.n_features

    @property
    def feature_columns(self):
        """The training feature columns a DataFrame is read by, or None (a vector model)."""
        return self.spec.names

    def _input(self, X, form=None):
        return model_input(X, self.spec, form or self.input_form)

    def predict(self, X) -> np.ndarray:  # pragma: no cover - every kind defines it
        raise NotImplementedError

    def __getattr__(self, name):
        # members of the family predictor (tree(t), feature_importances, n_trees, ...)
        if name.startswith("__") or "predictor" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["predictor"], name)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.model_class or self.kind}, "
                f"n_features={self.n_features})")


class ServedXML(ServedModel):
    """FastXML / PfastreXML: ``predict`` gives the ``topK`` labels of each row,
    ``predict_topk(X, k)`` the labels and their scores."""

    kind = "xml"
    input_form = "csr"

    def predict_topk(self, X, k: int | None = None):
        """(labels, scores): per row the list of up to ``k`` (default: the model's ``topK``)
        label ids, best first (ties to the smaller id), and the list of their float32
        scores; labels scoring 0 are left out, exactly as ``transform``'s prediction and
        scores columns."""
        k = int(self.params.get("topK", 5) if k is None else k)
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        indptr, indices, data, _ = self._input(X)
        labels, scores = self.predictor.predict(indptr, indices, data.astype(VALUE), k)
        counts = (scores > 0).sum(axis=1)
        return ([labels[i, :c].tolist() for i, c in enumerate(counts)],
                [scores[i, :c].tolist() for i, c in enumerate(counts)])

    def predict(self, X) -> list:
        """The ``topK`` labels of each row (``transform``'s prediction column)."""
        return self.predict_topk(X)[0]


class ServedLabelTree(ServedXML):
    """Parabel / Bonsai: as FastXML, with the label tree's own top-k (padding left out)."""

    def predict_topk(self, X, k: int | None = None):
        """(labels, scores): per row the lists ``transform`` writes, best first."""
        k = int(self.params.get("topK", 5) if k is None else k)
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        indptr, indices, data, _ = self._input(X)
        labels, scores = self.predictor.predict(indptr, indices, data.astype(VALUE), k)
        keep = labels >= 0
        return ([row[m].tolist() for row, m in zip(labels, keep)],
                [row[m].tolist() for row, m in zip(scores, keep)])


class ServedGBT(ServedModel):
    """GBT regressors and LambdaMART: ``predict`` is the raw score, as ``transform``."""

    kind = "gbt"
    input_form = "any"

    def __init__(self, predictor, meta: dict | None = None):
        params = model_params(meta or {})
        missing = float(params.get("missing", predictor.missing))
        if not (np.isnan(missing) and np.isnan(predictor.missing)) and \
                missing != predictor.missing:
            predictor = predictor.with_options(missing=missing)  # the model's param wins
        super().__init__(predictor, meta)

    def _feature_columns(self):
        return super()._feature_columns() or self.predictor.feature_names

    def _allows_nan(self) -> bool:
        return True  # NaN is "missing"

    def predict_raw(self, X, base_margin=None, n_threads: int = 1) -> np.ndarray:
        """Raw scores (margins): float64 (n,) for one output, (n, K) for K classes."""
        return self.predictor.predict_raw(self._input(X), base_margin, n_threads)

    def predict(self, X, base_margin=None, n_threads: int = 1) -> np.ndarray:
        """float64 (n,): the value (regression; ``exp(margin)`` for the log-link objectives
        poisson, tweedie, gamma and cox) or the score (ranking)."""
        raw = np.asarray(self.predict_raw(X, base_margin, n_threads), np.float64).reshape(-1)
        return np.exp(raw) if self.predictor.objective in LOG_LINK else raw

    def predict_contributions(self, X, base_margin=None) -> np.ndarray:
        """SHAP values (see ``TreeEnsemblePredictor.predict_contributions``)."""
        return self.predictor.predict_contributions(self._input(X), base_margin)

    def predict_leaf(self, X) -> np.ndarray:
        """int32 (n, n_trees): the tree-local id of the leaf each row reaches in each tree."""
        return self.predictor.predict_leaf(self._input(X))


class ServedGBTClassifier(ServedGBT):
    """GBT classifiers: ``predict`` the class (``thresholds`` applied), ``predict_proba``."""

    is_classifier = True

    def predict_proba(self, X, base_margin=None, n_threads: int = 1) -> np.ndarray:
        """float64 (n, K) class probabilities (K = 2 for binary)."""
        raw = self.predict_raw(X, base_margin, n_threads)
        return class_scores(raw, self.predictor.n_outputs)[1]

    def predict(self, X, base_margin=None, n_threads: int = 1) -> np.ndarray:
        """float64 (n,) class ids: argmax of p / thresholds (Spark ML's rule)."""
        t = self.params.get("thresholds")
        return predict_from_probability(self.predict_proba(X, base_margin, n_threads), t)


class ServedForest(ServedModel):
    """Decision trees and random forests."""

    kind = "forest"

    def _allows_nan(self) -> bool:
        return True  # transform routes NaN right, as the kernel does

    def predict(self, X) -> np.ndarray:
        """float64 (n,): the class of highest mean probability (lowest on ties), or the
        mean of the trees' values."""
        X = self._input(X)
        if not X.shape[0]:
            return np.zeros(0)
        return self.predictor.predict(X)

    def predict_quantiles(self, X, quantiles=None) -> np.ndarray:
        """float64 (n, Q): what ``transform`` puts in ``quantilesCol``, for ``quantiles``
        (default: the saved model's ``quantiles``); random forest regressors fitted with
        ``quantiles`` only."""
        qs = self.params.get("quantiles") if quantiles is None else quantiles
        if not qs:
            raise ValueError("quantiles: none given and the saved model sets none")
        X = self._input(X)
        return self.predictor.predict_quantiles(X, qs)


class ServedForestClassifier(ServedForest):
    """Classification trees and forests: ``predict_proba`` too."""

    is_classifier = True

    def predict_proba(self, X) -> np.ndarray:
        """float64 (n, K): the trees' mean class fractions."""
        X = self._input(X)
        if not X.shape[0]:
            return np.zeros((0, self.predictor.n_classes))
        return self.predictor.predict_values(X)


class ServedLinearSVC(ServedModel):
    """LinearSVC: ``predict`` the class (``threshold`` applied), ``predict_raw`` Spark's
    rawPrediction ([-m, m] for two classes, the K margins otherwise)."""

    kind = "linear_svm"
    is_classifier = True
    input_form = "csr"

    def _margins(self, X) -> np.ndarray:
        return self.predictor.margins(self._input(X))

    def predict_raw(self, X) -> np.ndarray:
        m = self._margins(X)
        return np.column_stack([-m[:, 0], m[:, 0]]) if self.predictor.num_classes == 2 else m

    def predict(self, X) -> np.ndarray:
        return self.predictor.predict_from_margins(self._margins(X))


class ServedFM(ServedModel):
    """FM, GBFM and FFM models: ``predict`` the value or the class (p > 0.5)."""

    kind = "fm"
    input_form = "csr"

    def _outputs(self, X):
        return self.predictor.predict_csr(*self._input(X)[:3])  # indptr, indices, data

    def predict_raw(self, X) -> np.ndarray:
        """float64 (n,): the margin (classifiers) or the value."""
        return self._outputs(X)[0]

    def predict(self, X) -> np.ndarray:
        return np.asarray(self._outputs(X)[1], np.float64)


class ServedFMClassifier(ServedFM):
    """FM, GBFM and FFM classifiers: ``predict`` the class (p > 0.5), ``predict_proba``."""

    is_classifier = True

    def predict(self, X) -> np.ndarray:
        return (self._outputs(X)[1] > 0.5).astype(np.float64)

    def predict_proba(self, X) -> np.ndarray:
        """float64 (n, 2): [1 - p, p]."""
        pred = self._outputs(X)[1]
        return np.column_stack([1.0 - pred, pred])


class ServedFMOrdinal(ServedFM):
    """Ordinal FM regression (``loss="ordinal"``): ``predict`` the expected label,
    ``predict_proba`` the (n, K) class probabilities (K: the label values, ascending), as
    the Spark model's prediction and probability columns."""

    def _ordinal(self, X):
        return self.predictor.predict_ordinal_csr(*self._input(X)[:3])  # indptr, indices, data

    def predict(self, X) -> np.ndarray:
        return self._ordinal(X)[1]

    def predict_proba(self, X) -> np.ndarray:
        """float64 (n, K): the class probabilities."""
        return self._ordinal(X)[2]


class ServedFMRanker(ServedModel):
    """FM ranker (implicit feedback): ``predict(users, items, X=None)`` the scores of
    (user id, item id) pairs (NaN for an id not seen in training; ``X``: the context rows
    when the model has a context vector), ``recommend(users, k)`` -> (item ids int64 (n, k'),
    scores float64 (n, k')), best first (an unseen user: ids -1, NaN), as the Spark model's
    ``transform`` and ``recommendForUserSubset`` give them."""

    kind = "fm_ranker"

    def predict(self, users, items=None, X=None) -> np.ndarray:  # type: ignore[override]
        if items is None:
            raise TypeError("predict(users, items, X=None): pass the item ids of the pairs")
        return self.predictor.score(users, items, X)

    def recommend(self, users, k: int = 10):
        return self.predictor.recommend(users, k)


def kernel_from_arrays(kind: str, arrays: dict, meta: dict):
    """The family's kernel predictor from a saved model's arrays and metadata (what
    ``load_model`` reads from the directory; ``sparkxml.serving.predict_udf`` gets the arrays
    memory-mapped, once per worker)."""
    if kind == "fastxml":
        from .fastxml.predictor import FastXMLPredictor

        return FastXMLPredictor(arrays, int(arrays["n_features"]), int(arrays["n_labels"]),
                                float(arrays["bias"]))
    if kind == "pfastrexml":
        from .fastxml.pfastre import PfastreXMLPredictor

        return PfastreXMLPredictor.from_arrays(arrays, meta)
    if kind in ("parabel", "bonsai"):
        from .labeltree.predictor import LabelTreePredictor

        return LabelTreePredictor.from_arrays(arrays)
    if kind == "gbt":
        from .gbt.predictor import TreeEnsemblePredictor

        return TreeEnsemblePredictor.from_arrays(arrays)
    if kind == "forest":
        from .forest.predictor import ForestPredictor

        return ForestPredictor.from_arrays(arrays)
    if kind == "linear_svm":
        from .linear.predictor import LinearSVCPredictor

        return LinearSVCPredictor.from_arrays(arrays, model_params(meta).get("threshold"))
    if kind in ("fm", "gbfm"):
        from .fm.predictor import FMPredictor, GBFMPredictor

        return (FMPredictor if kind == "fm" else GBFMPredictor).from_arrays(arrays)
    if kind == "ffm":
        from .fm.ffm import FFMPredictor

        return FFMPredictor.from_arrays(arrays)
    raise ValueError(f"model kind {kind!r} is not a predictor")


def serve(kind: str, predictor, meta: dict):
    """The served model of a loaded kernel predictor (``load_model``); a ``fields``
    vocabulary (an encoder, not a predictor) is returned as is."""
    if kind in ("fastxml", "pfastrexml"):
        return ServedXML(predictor, meta)
    if kind in ("parabel", "bonsai"):
        return ServedLabelTree(predictor, meta)
    if kind == "gbt":
        cls = ServedGBTClassifier if predictor.objective in CLASSIFIER_OBJECTIVES \
            else ServedGBT
        return cls(predictor, meta)
    if kind == "forest":
        return (ServedForestClassifier if predictor.n_classes else ServedForest)(predictor,
                                                                                  meta)
    if kind == "linear_svm":
        return ServedLinearSVC(predictor, meta)
    if kind == "fm_ranker":
        return ServedFMRanker(predictor, meta)
    if kind == "fm" and getattr(predictor, "link_name", "") == "ordinal":
        return ServedFMOrdinal(predictor, meta)
    if kind in ("fm", "gbfm", "ffm"):
        classifier = "Classification" in str(meta.get("class", "")) if meta.get("class") \
            else predictor.is_classifier
        return (ServedFMClassifier if classifier else ServedFM)(predictor, meta)
    return predictor


__all__ = ["ServedModel", "ServedXML", "ServedLabelTree", "ServedGBT", "ServedGBTClassifier", "ServedForest",
           "ServedForestClassifier", "ServedLinearSVC", "ServedFM", "ServedFMClassifier", "ServedFMOrdinal",
           "ServedFMRanker", "kernel_from_arrays", "model_params", "serve"]
