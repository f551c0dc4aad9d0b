"""Gradient Boosting Factorization Machines on Spark: ``GBFMRegressor`` and ``GBFMClassifier``.

GBFM (Cheng et al., RecSys 2014) adds pairwise interactions only between the field pairs that
help: features are grouped in fields (``fieldStarts``: e.g. user, item, age band, genre, each
a one-hot block, as ``sparkxml.fm.fields.FieldEncoder`` builds them), and each boosting stage

1. picks a field pair (p, q) by the paper's greedy selection on the current gradient: the
   field p whose per-feature fit explains the most, then the field q whose multiplier of that
   fit explains the most of what it leaves;
2. fits first-order terms for p and q and a rank-``factorSize`` interaction
   Σ_{i∈C_p, j∈C_q} x_i x_j ⟨V_p^i, V_q^j⟩ to the loss's second-order expansion by ``maxIter``
   sweeps of exact coordinate descent (regularised by ``regParam``);
3. adds it with shrinkage ``stepSize``.

Then (``jointFit="mcmc"``, the default) the distinct pairs that boosting chose are refitted
together, as a factorization machine restricted to them with a linear term for every feature,
by ``FMRegressor``'s Gibbs sampler with hyper-priors (``jointIter`` sweeps, ``burnIn``): the
boosted stages alone trail a plain FM on real rating data, the joint fit does not (see
``sparkxml_kernels.fm.gbfm_joint`` and docs/fm.rst). ``jointFit="none"`` keeps the boosted
stages as the paper does. With the joint fit, boosting only selects: it starts from a linear
term for every feature, chooses each pair once, and stops when no new pair explains more of
the gradient than noise would (the greedy gain less its expectation without signal; the
first, best pair is always taken), so ``numStages`` is an upper bound.

``model.stages`` lists the chosen pairs and their training-loss decrease (with the joint fit:
one entry per distinct pair, its boosting stages' gains summed). Early stopping
watches a validation set (``validationIndicatorCol``, ``earlyStoppingRounds``). Training is one
barrier stage, as for ``FMRegressor``; see ``sparkxml_kernels.fm.gbfm`` for the algorithm and
how it differs from the paper's text.
"""
from __future__ import annotations

from pyspark import keyword_only

from sparkxml._core.base import keywords_of
from sparkxml._core.params import (
    HasEarlyStoppingRounds,
    HasProbabilityCol,
    HasRawPredictionCol,
    HasValidationIndicatorCol,
)
from sparkxml.fm.base import FMEstimatorBase, FMModelBase, add_setters, check_field_starts
from sparkxml.fm.params import (
    CLASSIFIER_OUTPUTS,
    FM_CORE_PARAMS,
    FMCoreParams,
    HasJointFit,
    HasJointIter,
    HasNumStages,
)
from sparkxml_kernels.fm.predictor import GBFMPredictor

__all__ = ["GBFMRegressor", "GBFMRegressionModel", "GBFMClassifier", "GBFMClassificationModel"]

_PARAMS = FM_CORE_PARAMS + ("numStages", "validationIndicatorCol", "earlyStoppingRounds",
                            "jointFit", "jointIter")


class _GBFMParams(FMCoreParams, HasNumStages, HasValidationIndicatorCol, HasEarlyStoppingRounds,
                  HasJointFit, HasJointIter):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(numStages=100, stepSize=0.3, maxIter=3, regParam=1e-4, initStd=0.01,
                         earlyStoppingRounds=0, jointFit="mcmc", jointIter=200)


class _GBFMClassifierParams(_GBFMParams, HasRawPredictionCol, HasProbabilityCol):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(**CLASSIFIER_OUTPUTS)


class _GBFMEstimator(FMEstimatorBase):
    _kind = "gbfm"
    _unit = "stage"

    def _progress_total(self, params: dict) -> int:
        return int(params["numStages"])

    def _check_params(self, weight, valid):
        if not self.isDefined(self.fieldStarts) or self._opt(self.fieldStarts) is None:
            raise ValueError("fieldStarts is required: GBFM chooses pairs of fields (e.g. "
                             "from sparkxml.fm.fields.FieldEncoder's fieldStarts)")
        if len(self.getFieldStarts()) < 2:
            raise ValueError(f"fieldStarts={self.getFieldStarts()!r}: GBFM needs at least two "
                             f"fields")
        if self.getEarlyStoppingRounds() > 0 and not valid:
            raise ValueError("earlyStoppingRounds > 0 needs validationIndicatorCol")
        if self.getJointFit() == "mcmc":
            self._check_mcmc(weight, "jointFit='none'", iters="jointIter",
                             by="with jointFit='mcmc'")

    def _train_params(self, stats: dict) -> dict:
        fs = check_field_starts(self.getFieldStarts(), stats["d"])
        return {"fieldStarts": fs, "numStages": self.getNumStages(),
                "stepSize": self.getStepSize(), "factorSize": self.getFactorSize(),
                "maxIter": self.getMaxIter(), "regParam": self.getRegParam(),
                "initStd": self.getInitStd(), "seed": int(self.getSeed()),
                "earlyStoppingRounds": self.getEarlyStoppingRounds(),
                "jointFit": self.getJointFit(), "jointIter": self.getJointIter(),
                "burnIn": self.getBurnIn()}


class GBFMRegressor(_GBFMEstimator, _GBFMParams):
    """GBFM regression (squared loss).

    Parameters
    ----------
    featuresCol : str, default "features"
        Spark ML vector column (finite values), all of one size.
    labelCol : str, default "label"
    weightCol : str, optional
        Non-negative row weights.
    fieldStarts : list of int (required)
        Start index of each field, strictly ascending from 0; the last field runs to the end
        of the vector. At least two fields.
    numStages : int, default 100
        Boosting stages (one field pair each), at most. With ``jointFit="mcmc"`` each stage
        adds a new pair and boosting stops earlier when no new pair explains more of the
        gradient than noise would.
    stepSize : float, default 0.3
        Shrinkage of every stage, in (0, 1].
    factorSize : int, default 8
        Rank of each stage's interaction.
    maxIter : int, default 3
        Coordinate-descent sweeps fitting each stage.
    regParam : float, default 1e-4
        L2 regularisation of the stage parameters (on the mean loss); also used by the greedy
        pair selection.
    initStd : float, default 0.01
        Standard deviation of the initial factors beyond the first (which starts from the
        greedy selection's fit).
    seed : int, default 0
    validationIndicatorCol : str, optional
        Boolean column: true rows are the validation set (not trained on); its loss (RMSE or
        log-loss) is recorded after every stage.
    earlyStoppingRounds : int, default 0
        Stop when the validation loss has not improved for this many stages (0 = off); the
        model keeps the best number of stages.
    jointFit : {"mcmc", "none"}, default "mcmc"
        "mcmc": refit the distinct selected pairs together, as a factorization machine
        restricted to them (rank ``factorSize``, a linear term for every feature, fitted by
        :class:`sparkxml.fm.FMRegressor`'s Gibbs sampler with hyper-priors; probit for the
        classifier). "none": keep the boosted stages.
    jointIter : int, default 200
        MCMC sweeps of the joint fit.
    burnIn : int, default 5
        Joint-fit sweeps discarded before samples are averaged (below ``jointIter``).
    numWorkers, timeoutSeconds
        As :class:`sparkxml.fm.FMRegressor`.
    verbose : int, default 0
        Log the phase times and one line every ``verbose`` stages (training loss, validation
        metric); 0 = silent.

    Differences from the paper
    --------------------------
    The paper's model is the boosted stages (``jointFit="none"``). By default the stages
    only choose the pairs: the joint fit replaces them, so the model holds one stage per
    distinct pair and the prediction is the posterior mean of the restricted FM. The
    selection then starts from a linear term for every feature, never chooses a pair twice
    and scores fields by their greedy gain less its expectation on a gradient without
    signal (``selectionGain``).

    Examples
    --------
    >>> from sparkxml import FieldEncoder
    >>> rng = np.random.default_rng(0)
    >>> rows = [(int(u), int(i), int(h), float(u * i)) for u, i, h in rng.integers(0, 4, (60, 3))]
    >>> df = spark.createDataFrame(rows, ["user", "item", "hour", "label"])
    >>> enc = FieldEncoder(inputCols=["user", "item", "hour"]).fit(df)
    >>> model = GBFMRegressor(fieldStarts=enc.fieldStarts, numStages=3, jointIter=30,
    ...                       seed=0).fit(enc.transform(df))
    >>> sorted(model.stages[0]["fields"])      # the (user, item) pair the label comes from
    [0, 1]
    >>> model.transform(enc.transform(df)).columns[-1]
    'prediction'
    """

    _task = "regression"

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", weightCol=None,
                 predictionCol="prediction", fieldStarts=None, numStages=100, stepSize=0.3,
                 factorSize=8, maxIter=3, regParam=1e-4, initStd=0.01, seed=0,
                 numWorkers=None, validationIndicatorCol=None, earlyStoppingRounds=0,
                 timeoutSeconds=600.0, verbose=0, jointFit="mcmc", jointIter=200,
                 burnIn=5):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, featuresCol="features", labelCol="label", weightCol=None,
                  predictionCol="prediction", fieldStarts=None, numStages=100, stepSize=0.3,
                  factorSize=8, maxIter=3, regParam=1e-4, initStd=0.01, seed=0,
                  numWorkers=None, validationIndicatorCol=None, earlyStoppingRounds=0,
                  timeoutSeconds=600.0, verbose=0, jointFit="mcmc", jointIter=200,
                  burnIn=5):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return GBFMRegressionModel


class GBFMClassifier(_GBFMEstimator, _GBFMClassifierParams):
    """GBFM binary classification (logistic loss; labels 0 and 1).

    Takes every parameter of :class:`GBFMRegressor`, plus ``rawPredictionCol`` (default
    "rawPrediction": [-m, m], m the margin: Φ⁻¹(p) after the probit joint fit, the log-odds
    with ``jointFit="none"``) and ``probabilityCol`` (default "probability").

    Examples
    --------
    >>> from sparkxml import FieldEncoder
    >>> rng = np.random.default_rng(0)
    >>> rows = [(int(u), int(i), int(h), float(u == i)) for u, i, h in rng.integers(0, 4, (60, 3))]
    >>> df = spark.createDataFrame(rows, ["user", "item", "hour", "label"])
    >>> enc = FieldEncoder(inputCols=["user", "item", "hour"]).fit(df)
    >>> model = GBFMClassifier(fieldStarts=enc.fieldStarts, numStages=3, jointIter=30,
    ...                        seed=0).fit(enc.transform(df))
    >>> sorted(model.stages[0]["fields"])      # label 1 where user == item
    [0, 1]
    >>> model.transform(enc.transform(df)).columns[-3:]
    ['rawPrediction', 'probability', 'prediction']
    """

    _task = "classification"

    # the regressor's keywords and the classifier's outputs
    @keyword_only
    @keywords_of(GBFMRegressor.__init__, add=CLASSIFIER_OUTPUTS)
    def __init__(self, **kwargs):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    @keywords_of(GBFMRegressor.setParams, add=CLASSIFIER_OUTPUTS)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)

    @property
    def _model_class(self):
        return GBFMClassificationModel


add_setters(GBFMRegressor, _PARAMS)
add_setters(GBFMClassifier, _PARAMS + tuple(CLASSIFIER_OUTPUTS))


class _GBFMModel(FMModelBase):
    """Save format: ``path/metadata`` (Spark ML params, ``modelKind`` "gbfm") and
    ``path/data/`` (the arrays as parquet chunk rows, ``sparkxml_kernels.persist``) with
    ``w0``, ``field_starts`` int64 (m+1,), ``stage_fields`` int32 (S, 2), ``stage_offsets``
    int64 (S+1,), ``stage_V`` float64 (R, k), ``stage_lin`` float64 (R,), ``stage_gain``
    float64 (S,), ``link``, ``n_features``, ``linear`` float64 (d,) (joint fit; see
    ``sparkxml_kernels.fm.predictor``), plus ``summary.*`` training history."""

    _model_kind = "gbfm"
    _predictor_class = GBFMPredictor
    _required_arrays = GBFMPredictor.keys

    @property
    def stages(self) -> list:
        """One dict a stage, in order: ``stage``, ``fields`` (p, q) (field indices into
        ``fieldStarts``), ``gain`` (training-loss decrease of the stage, mean loss) and
        ``selectionGain`` (the greedy selection's score of the pair, when known)."""
        P = self._predictor
        sel = (self._summary.history.get("selection_gain")
               if self._summary is not None else None) or []
        return [{"stage": s, "fields": (int(p), int(q)), "gain": float(P.stage_gain[s]),
                 "selectionGain": float(sel[s]) if s < len(sel) else None}
                for s, (p, q) in enumerate(P.stage_fields)]


class GBFMRegressionModel(_GBFMModel, _GBFMParams):
    """Fitted :class:`GBFMRegressor`: adds ``predictionCol`` (double)."""

    __doc__ += _GBFMModel.__doc__
    _task = "regression"


class GBFMClassificationModel(_GBFMModel, _GBFMClassifierParams):
    """Fitted :class:`GBFMClassifier`: adds ``rawPredictionCol``, ``probabilityCol`` and
    ``predictionCol``."""

    __doc__ += _GBFMModel.__doc__
    _task = "classification"


add_setters(GBFMRegressionModel, ("featuresCol", "predictionCol"))
add_setters(GBFMClassificationModel, ("featuresCol", "predictionCol", "rawPredictionCol",
                                      "probabilityCol"))
