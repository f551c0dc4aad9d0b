"""What every model of the GBT engine shares (``GBTRegressionModel``,
``GBTClassificationModel``, ``LambdaMARTModel``): transform, single-row prediction, staged
evaluation, trees and dumps, feature names, persistence.

The public model classes stay in ``sparkxml.gbt`` / ``sparkxml.gbt.lambdamart`` (their module path is
what saved models record); this module holds their shared base.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import DenseVector, Vector, VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.arrow import batch_features, margin_column
from sparkxml._core.base import SparkXMLPredictorModel
from sparkxml._core.histogram_engine import (
    X_COL,
    check_feature_columns,
)
from sparkxml._core.progress import FitProgress
from sparkxml._core.validation import check_output_columns
from sparkxml.gbt.evaluation import metric_frame, metric_values
from sparkxml.gbt.features import SPARSE_MIN_FEATURES
from sparkxml.gbt.summary import GBTTrainingSummary
from sparkxml.gbt.tasks import make_predict_fn, predictor_with_missing
from sparkxml_kernels.gbt import dump as _dump
from sparkxml_kernels.gbt.metrics import metric_from_stats, metric_stats
from sparkxml_kernels.gbt.outputs import class_scores, predict_from_probability
from sparkxml_kernels.gbt.predictor import ARRAY_KEYS, OPTIONAL_KEYS, TreeEnsemblePredictor

_M_COL = "__sparkxml_margin"
# evaluateEachIteration's loss per objective: MLlib's squared error (the mean of (p - y)^2)
# for regression, the log loss of the engine's own metric for classification
_ITERATION_LOSS = {"squared_error": "rmse", "logistic": "logloss", "softmax": "mlogloss"}


class TreeView:
    """One tree of a model (the ``trees`` list, as MLlib's ``DecisionTreeRegressionModel``s).

    Attributes
    ----------
    arrays : dict
        The tree's node arrays (``TreeEnsemblePredictor.tree``): ``feature``, ``threshold``,
        ``default_left``, ``left``, ``right``, ``value``, ``gain``, ``cover``, ``depth``;
        node 0 is the root, leaves have ``left == -1``. What ``sparkxml.plotting`` draws.
    output : int
        The class (output) this tree adds to.
    featureNames : list of str or None
    """

    def __init__(self, arrays: dict, index: int, feature_names=None):
        self.arrays = arrays
        self.index = int(index)
        self.output = int(arrays["output"])
        self.featureNames = feature_names

    @property
    def numNodes(self) -> int:
        return int(self.arrays["feature"].size)

    @property
    def numLeaves(self) -> int:
        return int((self.arrays["left"] < 0).sum())

    @property
    def depth(self) -> int:
        return int(self.arrays["depth"].max())

    @property
    def toDebugString(self) -> str:
        internal = self.arrays["left"] >= 0
        if np.isnan(self.arrays["threshold"][internal]).any():  # category-set splits
            raise ValueError("toDebugString is not supported for trees with categorical "
                             "splits (categoricalCols)")
        lines = _dump._tree_lines(self.arrays, self.featureNames, 2)
        return (f"Tree {self.index} (output {self.output}): depth={self.depth}, "
                f"numNodes={self.numNodes}\n" + "\n".join(lines) + "\n")

    def __repr__(self):
        return f"TreeView(index={self.index}, numNodes={self.numNodes}, depth={self.depth})"


class GBTModelBase(SparkXMLPredictorModel):
    """Shared model logic (see the module docstring). Subclasses define ``_outputs``."""

    _model_kind = "gbt"
    _required_arrays = tuple(k for k in ARRAY_KEYS if k not in OPTIONAL_KEYS)
    _predictor_class = TreeEnsemblePredictor
    _summary_class = GBTTrainingSummary

    # ------------------------------------------------------------------ attributes
    @property
    def getNumTrees(self) -> int:
        """Number of trees (rounds x classes for multiclass), as pyspark's GBT models."""
        return int(self._predictor.n_trees)

    @property
    def totalNumNodes(self) -> int:
        return int(self._predictor.feature.size)

    @property
    def featureNames(self) -> list:
        """Names of the features: ``featuresCols``, or the vector column's ML attribute
        names (e.g. from ``VectorAssembler``); ``f<i>`` where none is known."""
        names = self._predictor.feature_names
        return list(names) if names is not None else [f"f{i}" for i in
                                                      range(self.numFeatures)]

    @property
    def featureImportances(self) -> DenseVector:
        """Total split gain per feature, normalised to sum 1 (Spark ML's convention)."""
        return DenseVector(self._predictor.feature_importances("gain", normalize=True))

    def getFeatureImportances(self, importanceType: str = "gain",
                              normalize: bool = False) -> dict:
        """{feature name: score} of the features split on, as XGBoost's ``get_score``.

        Parameters
        ----------
        importanceType : str, default "gain"
            XGBoost's names: "weight" (number of splits; "split" too), "gain" (average gain
            of the feature's splits), "cover" (their average cover), "total_gain",
            "total_cover" (``sparkxml_kernels.gbt.importance``).
        normalize : bool, default False
            Divide by the sum of the scores.

        Returns
        -------
        dict of str to float
        """
        from sparkxml_kernels.gbt.importance import importance_scores

        p = self._predictor
        imp, used = importance_scores(p.feature, p.left, p.gain, p.cover, p.n_features,
                                      importanceType)
        s = imp.sum()
        if normalize and s > 0:
            imp = imp / s
        names = self.featureNames
        return {names[i]: float(imp[i]) for i in np.flatnonzero(used)}

    @property
    def trees(self) -> list:
        """The trees, as :class:`TreeView` objects (their ``arrays`` for plotting)."""
        names = self._predictor.feature_names
        return [TreeView(self._predictor.tree(t), t, names)
                for t in range(self._predictor.n_trees)]

    @property
    def treeWeights(self) -> list:
        """Every tree's weight: 1.0 (the learning rate is in the leaf values)."""
        return [1.0] * self.getNumTrees

    @property
    def toDebugString(self) -> str:
        """The model as text, in Spark MLlib's layout (see ``sparkxml_kernels.gbt.dump``)."""
        return _dump.dump_text(self._predictor, header=self._debug_header())

    def _debug_header(self) -> str:
        return (f"{type(self).__name__}: uid={self.uid}, numTrees={self.getNumTrees}, "
                f"numFeatures={self.numFeatures}")

    def dump(self, format: str = "text") -> str:  # noqa: A002 - XGBoost's name
        """The model as ``format`` "text" (= ``toDebugString``) or "json" (one document:
        base score, objective, feature names, every tree as nested nodes; see
        ``sparkxml_kernels.gbt.dump``)."""
        if format == "text":
            return self.toDebugString
        if format == "json":
            return _dump.dump_json(self._predictor)
        raise ValueError(f"format must be 'text' or 'json', got {format!r}")

    def saveNativeModel(self, path: str, format: str = "xgboost-json",  # noqa: A002
                        overwrite: bool = False, **options) -> None:
        """Write the model as one file another library loads (SynapseML's name).

        Parameters
        ----------
        path : str
            The file to write (a local path or a URI ``pyarrow.fs`` opens).
        format : {"xgboost-json", "lightgbm-text", "onnx"}
            "xgboost-json": ``xgboost.Booster(model_file=path)`` predicts what this model
            predicts, to float32 rounding (XGBoost's own precision); pass the model's
            ``missing`` to XGBoost's ``DMatrix`` when it is not NaN. "lightgbm-text":
            ``lightgbm.Booster(model_file=path)`` predicts the same doubles (``missing``
            NaN or 0.0). "onnx": an ``ai.onnx.ml`` TreeEnsembleRegressor / Classifier graph
            that ``onnxruntime`` runs on float32 input (``sparkxml[onnx]``; no categorical
            splits). See ``sparkxml_kernels.export`` for how trees, category sets, default
            directions and base scores map.
        overwrite : bool
            Replace an existing file (otherwise a FileExistsError).
        **options
            Format options: ``dtype="float64"`` for "onnx" makes a graph of float64 input
            that ONNX Runtime sums in float64 (agreement to one float32 rounding of its
            output, ``sparkxml_kernels.export.onnx_trees``).
        """
        from sparkxml_kernels.export import export_model

        if self._predictor is None:
            raise RuntimeError("this model has no trees (was it constructed directly?)")
        pred = self._predictor
        missing = float(self.getMissing())
        if not (np.isnan(missing) and np.isnan(pred.missing)) and missing != pred.missing:
            pred = pred.with_options(missing=missing)
        export_model(pred, path, format, overwrite=overwrite, **options)

    # objectives this class holds (fromXGBoost refuses the others)
    _objectives: tuple = ()

    @classmethod
    def fromXGBoost(cls, model):
        """The model an XGBoost JSON model describes (usable as ``initModel``).

        Parameters
        ----------
        model : str, bytes, dict or xgboost.Booster
            The path of a ``.json`` model file (a local path or a URI ``pyarrow.fs``
            opens), its contents, the parsed document, or a Booster (read through
            ``save_raw("json")``).

        Returns
        -------
        The model class this is called on; ``featuresCol`` "features" (XGBoost's feature
        names, when the file has them, are its ``featureNames``).

        Notes
        -----
        gbtree boosters of one-output trees convert, with numerical and categorical
        splits; predictions equal XGBoost's to float32 rounding (XGBoost sums in float32).
        The value XGBoost read as missing is not in its file: set ``missing`` when it was
        not NaN. See ``sparkxml_kernels.export.xgboost_json.from_xgboost_json``.
        """
        from sparkxml_kernels.export.xgboost_json import from_xgboost_json
        from sparkxml_kernels.persist import _read_bytes, resolve

        if hasattr(model, "save_raw"):
            model = bytes(model.save_raw("json"))
        elif isinstance(model, str) and not model.lstrip().startswith("{"):
            fs, p = resolve(model)
            model = _read_bytes(fs, p)
        pred = from_xgboost_json(model)
        if pred.objective not in cls._objectives:
            raise ValueError(f"an XGBoost model with objective {pred.objective!r} is not a "
                             f"{cls.__name__} (it holds {list(cls._objectives)})")
        return cls(pred)

    # ------------------------------------------------------------------ one row
    def _row(self, value):
        if isinstance(value, Vector):
            x = value.toArray()
        else:
            x = np.asarray(value, np.float64).reshape(-1)
        if x.size != self.numFeatures:
            raise ValueError(f"the vector has {x.size} features; the model was trained on "
                             f"{self.numFeatures}")
        pred = self._predictor
        missing = float(self.getMissing())
        if not (np.isnan(missing) and np.isnan(pred.missing)) and missing != pred.missing:
            pred = pred.with_options(missing=missing)
        return pred, x.reshape(1, -1)

    def _raw_one(self, features) -> np.ndarray:
        pred, X = self._row(features)
        return np.atleast_1d(pred.predict_raw(X)[0])

    def predict(self, value) -> float:
        """Prediction for one feature vector (a Spark ML Vector or a sequence): the value
        (regression), the score (ranking) or the class (classification)."""
        return float(self._raw_one(value)[0])

    # ------------------------------------------------------------------ transform
    def _outputs(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _extra_outputs(self):
        out = []
        for param, kind in ((self.predContribCol, "contrib"), (self.leafCol, "leaf")):
            if self.isDefined(param) and self.getOrDefault(param):
                out.append((self.getOrDefault(param), kind))
        return out

    def _output_type(self, kind):
        if kind in ("raw", "prob", "leaf"):
            return VectorUDT()
        if kind == "contrib":
            inner = T.ArrayType(T.DoubleType(), False)
            return inner if self._predictor.n_outputs == 1 else T.ArrayType(inner, False)
        return T.DoubleType()

    def _margin_col(self, fields):
        name = self._opt(self.baseMarginCol)
        if not name:
            return None
        if name not in fields:
            raise ValueError(f"baseMarginCol: column '{name}' is not in the DataFrame (the "
                             f"model was trained with base margins; unset baseMarginCol to "
                             f"predict without them)")
        return name

    def _check_features(self, fields, spec):
        check_feature_columns(fields, spec)

    def _transform_validated(self, dataset):
        if self._predictor is None:
            raise RuntimeError("this model has no trees (was it constructed directly?)")
        spec = self._features_spec()
        fields = {f.name: f.dataType for f in dataset.schema.fields}
        self._check_features(fields, spec)
        outs = self._outputs() + self._extra_outputs()
        check_output_columns(fields, outs)
        margin = self._margin_col(fields)
        handle = self._task_model(dataset)  # not the trees themselves: see sparkxml._core.serving
        schema = T.StructType(list(dataset.schema.fields)
                              + [T.StructField(n, self._output_type(k)) for n, k in outs])
        drop = []
        if spec["kind"] == "vector" and self.numFeatures >= SPARSE_MIN_FEATURES:
            spec = dict(spec, sparse=True)  # the VectorUDT struct: stored entries only
        elif spec["kind"] == "vector":
            # the task reads the features as a dense array made in the JVM (feature_exprs)
            dataset = dataset.withColumn(X_COL, vector_to_array(F.col(spec["col"])))
            spec = {"kind": "vector", "col": X_COL}
            drop.append(X_COL)
        if margin is not None and isinstance(fields[margin], VectorUDT):
            dataset = dataset.withColumn(_M_COL, vector_to_array(F.col(margin)))
            margin = _M_COL
            drop.append(_M_COL)
        options = {"margin_col": margin, "thresholds": self._thresholds(),
                   "missing": float(self.getMissing()),
                   "nthread": self._opt(self.nthread) if self.hasParam("nthread") else None}
        predict = make_predict_fn(handle, spec, self.numFeatures, [k for _, k in outs],
                                   [n for n, _ in outs], drop, options)
        return dataset.mapInArrow(predict, schema)

    def _thresholds(self):
        return None

    def _plain(self):
        """A copy without the SHAP and leaf outputs (what ``evaluate`` transforms with)."""
        that = self.copy()
        for param in (that.predContribCol, that.leafCol):
            if that.isSet(param):
                that.clear(param)
        return that

    # ------------------------------------------------------------------ evaluation
    def _trained_metrics(self) -> list:
        """The metrics recorded in training (``summary.metricHistory``)."""
        return list(self._summary.metricHistory) if self._summary is not None else []

    def _metric_values(self, dataset, names, group=None, label_gain=None):
        """``({metric: value}, queries)`` on ``dataset`` (``sparkxml.gbt.evaluation``)."""
        self._validate_params()
        return metric_values(self, dataset, names, group, label_gain)

    def _iteration_metric(self, objective):
        return _ITERATION_LOSS.get(objective)

    def evaluateEachIteration(self, dataset) -> list:
        """The loss on ``dataset`` after each boosting round (Spark MLlib's
        ``evaluateEachIteration``), weighted by ``weightCol`` when set: the mean squared
        error for regression (as MLlib's "squared" loss), the mean log loss for
        classification (MLlib's "logistic" loss is twice it: its margin is half ours), the
        multiclass log loss for more classes, the objective's own metric for the other
        regression objectives (``mae``, ``quantile@alpha``, ``poisson-nloglik``, ...; none
        for cox). Starts from ``baseMarginCol`` when set."""
        self._validate_params()
        objective = self._predictor.objective
        metric = self._iteration_metric(objective)
        if metric is None:
            raise ValueError(f"evaluateEachIteration is defined for regression and "
                             f"classification, not objective {objective!r}")
        cols, spec, label, weight, margin = metric_frame(self, dataset)
        fn = _make_staged_fn(self._task_model(dataset), float(self.getMissing()), spec,
                             self.numFeatures, label, weight, margin, metric)
        with FitProgress(dataset.sparkSession, self).phase("evaluate"):
            rows = dataset.select(*cols).mapInArrow(fn, "stats binary").collect()
        R = self._predictor.n_trees // self._predictor.n_outputs
        total = None
        for r in rows:
            a = np.frombuffer(r["stats"], np.float64).reshape(R, -1)
            total = a.copy() if total is None else total + a
        if total is None:
            raise ValueError("the DataFrame is empty")
        if metric == "rmse":  # MLlib reports the mean squared error
            return [float(s[0] / s[1]) for s in total]
        return [metric_from_stats(metric, s) for s in total]


def feature_names(dataset, spec, d):
    """``featuresCols``, or the names in the vector column's ML attribute metadata (what
    ``VectorAssembler`` writes); None when the column has none."""
    if spec["kind"] == "columns":
        return list(spec["cols"])
    try:
        attrs = dataset.schema[spec["col"]].metadata.get("ml_attr", {}).get("attrs", {})
    except (KeyError, AttributeError):
        return None
    names = [None] * d
    for group in attrs.values():
        for a in group:
            i = a.get("idx")
            if isinstance(i, int) and 0 <= i < d and a.get("name"):
                names[i] = str(a["name"])
    if not any(names):
        return None
    return [n if n else f"f{i}" for i, n in enumerate(names)]


def _make_staged_fn(handle, missing, spec, n_features, label, weight, margin_col, metric):
    """Per partition: the metric's summable statistics after every round, float64 (R, S).
    ``handle``: the model's ``ModelHandle``; ``missing``: the model's missing value."""

    def staged(batches):
        pred = predictor_with_missing(handle, missing)
        K = pred.n_outputs
        R = pred.n_trees // K
        total = None
        for b in batches:
            if b.num_rows == 0:
                continue
            X = batch_features(b, spec, n_features)
            y = np.asarray(b.column(b.schema.get_field_index(label)).to_numpy(
                zero_copy_only=False), np.float64)
            w = None if weight is None else np.asarray(
                b.column(b.schema.get_field_index(weight)).to_numpy(zero_copy_only=False),
                np.float64)
            raw = pred._start(b.num_rows, None if margin_col is None
                              else margin_column(b, margin_col, K))
            per_tree = pred.tree_values(X)
            out = []
            for r in range(R):
                for k in range(K):
                    t = r * K + k
                    raw[:, pred.tree_outputs[t]] += per_tree[:, t]
                out.append(metric_stats(metric, y, raw[:, 0] if K == 1 else raw, w))
            stats = np.vstack(out)
            total = stats if total is None else total + stats
        if total is not None:
            yield pa.RecordBatch.from_pydict({"stats": [total.tobytes()]})

    return staged


def single_row_classifier_api(cls):
    """``predictRaw`` / ``predictProbability`` / ``predict`` on one vector, as Spark ML's
    probabilistic classification models (``thresholds`` apply to ``predict``)."""

    def predictRaw(self, value) -> DenseVector:
        """Raw scores of one vector: [-margin, margin] (two classes) or the K scores."""
        rawm, _ = class_scores(self._raw_one(value), self._predictor.n_outputs)
        return DenseVector(rawm[0])

    def predictProbability(self, value) -> DenseVector:
        """Class probabilities of one vector."""
        _, prob = class_scores(self._raw_one(value), self._predictor.n_outputs)
        return DenseVector(prob[0])

    def predict(self, value) -> float:
        """The predicted class of one vector (``thresholds`` applied)."""
        _, prob = class_scores(self._raw_one(value), self._predictor.n_outputs)
        return float(predict_from_probability(prob, self._thresholds())[0])

    cls.predictRaw = predictRaw
    cls.predictProbability = predictProbability
    cls.predict = predict
    return cls
