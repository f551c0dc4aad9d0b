"""PfastreXML on Spark (Jain, Prabhu & Varma, KDD'16): FastXML for tail labels.

The trees are FastXML's, grown on propensity-scored DCG: each label weighs its inverse
propensity ``1 + C (N_l + B)^-A`` (``C = (ln N - 1)(B + 1)^A``, from the training label
counts), both in the split objective and in the leaf distributions, and gains are not
normalised by the ideal DCG. Tail classifiers (one centroid a label) then rerank the trees'
best labels. Training runs exactly as FastXML's (``_fastxml_fit``); the kernels are
``sparkxml_kernels.fastxml`` (shared) and ``sparkxml_kernels.fastxml.pfastre``.
"""
from __future__ import annotations

from pyspark import keyword_only

from sparkxml._core.base import keywords_of
from sparkxml._core.params import add_setters
from sparkxml._core.validation import check_int_array_column, check_vector_column
from sparkxml.fastxml.fastxml import FastXML, FastXMLModel, FastXMLTrainingSummary
from sparkxml.fastxml.fit import fit_forest
from sparkxml.fastxml.params import PFASTRE_DEFAULTS, PfastreXMLParams
from sparkxml_kernels.fastxml.pfastre import TAIL_KEYS, PfastreXMLPredictor


class PfastreXML(FastXML, PfastreXMLParams):
    """PfastreXML extreme multi-label classifier (Jain, Prabhu & Varma, KDD'16), and PfastXML
    with ``tailClassifiers=False``.

    Every FastXML param applies with the same meaning and default (``numTrees`` 50,
    ``maxLeaf`` 10, ``labelsPerLeaf`` 100, ``logLossCoeff`` 1, ``bias`` 1, ``seed``,
    ``numWorkers``, ``rowOrder``, ``trainingMode``, columns, ``topK``); see ``FastXML``. In
    addition:

    Parameters
    ----------
    propensityA, propensityB : float, default 0.55, 1.5
        Inverse propensity of label l: ``1 + C (N_l + B)^-A`` with ``C = (ln N - 1)(B + 1)^A``,
        N training rows, N_l rows carrying l (computed in float64, used in float32). The
        trees optimise DCG with these label weights and their leaves hold the weighted label
        means, as the authors' ``PfastreXML_train`` with such an inverse-propensity file.
    tailClassifiers : bool, default True
        Fit the tail classifiers and rerank with them; False is PfastXML (trees only).
    gamma : float, default 30
        Tail score of label l for a row x: ``1 / (1 + exp(gamma (|w_l|^2 + 1 - 2 x̂·w_l)))``,
        x̂ the row with the bias feature appended, unit-normalised, and w_l the mean of the
        training rows carrying l, normalised the same way.
    alpha : float, default 0.8
        Final score ``tree^alpha * tail^(1 - alpha)``.
    numCandidates : int, default 1000
        Per row, the labels of highest tree score that get a tail score (the others are not
        predicted).

    At seed 0 with ``rowOrder="input"`` the trees are the authors' (``PfastreXML_train -s 0``
    given the same inverse propensities) node for node, and the centroids equal their ``w``
    file; see ``sparkxml_kernels.fastxml.pfastre`` for where scoring differs.

    Examples
    --------
    Propensity-scored precision (PSP@1) with the inverse propensities the model was trained
    with:

    >>> from sparkxml import XMLEvaluator
    >>> from sparkxml.synthetic import make_multilabel, rows_frame
    >>> X, Y = make_multilabel(n_rows=60, n_features=50, n_labels=5, seed=0)
    >>> train = rows_frame(spark, X, Y, 0, 60, num_features=50)
    >>> model = PfastreXML(numTrees=4, seed=0).fit(train)
    >>> model.hasTailClassifiers, len(model.inversePropensities)
    (True, 5)
    >>> psp = XMLEvaluator(metricName="pspAtK", k=1,
    ...                    inversePropensities=model.inversePropensities)
    >>> 0.5 < psp.evaluate(model.transform(train)) <= 1.0
    True
    """

    _model_kind = "pfastrexml"

    @keyword_only
    @keywords_of(FastXML.__init__, add=PFASTRE_DEFAULTS)
    def __init__(self, **kwargs):
        super().__init__()  # FastXML's keyword_only resets _input_kwargs: set ours after it
        self._set_params(**kwargs)

    @keyword_only
    @keywords_of(FastXML.setParams, add=PFASTRE_DEFAULTS)
    def setParams(self, **kwargs):
        return self._set_params(**self._input_kwargs)

    def _fit_validated(self, dataset):
        check_vector_column(dataset, self.getFeaturesCol())
        check_int_array_column(dataset, self.getLabelsCol())
        A, B = float(self.getPropensityA()), float(self.getPropensityB())
        if not B > -1.0:
            raise ValueError(f"PfastreXML: propensityB={B} must be > -1 (the propensities use "
                             f"(B + 1)^A)")
        tail = bool(self.getTailClassifiers())
        forest, extra, n_features, n_labels, info = fit_forest(
            self, dataset, "PfastreXML", propensity=(A, B), tail=tail)
        model = PfastreXMLModel._create(forest, n_features, n_labels, float(self.getBias()),
                                        extra)
        model._training_info = info
        model._summary = FastXMLTrainingSummary._from_info(info, self.getNumTrees())
        return model


add_setters(PfastreXML, ("propensityA", "propensityB"))


class PfastreXMLModel(FastXMLModel, PfastreXMLParams):
    """A trained PfastreXML model: FastXML's outputs (``predictionCol`` array<int>, the topK
    labels best first; ``scoresCol`` array<float> aligned), where a score is
    ``tree^alpha * tail^(1 - alpha)`` over the row's ``numCandidates`` best tree labels, or
    the tree score alone (the mean of the reached leaves' propensity-weighted label means)
    with ``tailClassifiers=False``. ``gamma``, ``alpha``, ``numCandidates``,
    ``tailClassifiers`` and ``topK`` may be changed on the model; ``tailClassifiers=True``
    needs a model fitted with them.

    Save format
    -----------
    As ``FastXMLModel`` with ``modelKind`` "pfastrexml", plus the arrays
    ``inv_prop`` float32 (L,) the inverse propensities used in training, and the tail
    centroids as CSR over labels ``tail_indptr`` int64 (L+1,), ``tail_index`` int32 (feature
    id, ``n_features`` being the bias, ascending), ``tail_value`` float32 (all three empty
    when fitted with ``tailClassifiers=False``). ``sparkxml_kernels.load_model(path)`` serves
    it with the saved gamma, alpha, numCandidates, tailClassifiers and topK (its
    ``.predictor`` is a ``PfastreXMLPredictor``).
    """

    _model_kind = "pfastrexml"
    _required_arrays = FastXMLModel._required_arrays + ("inv_prop",) + TAIL_KEYS

    @classmethod
    def _create(cls, forest: dict, n_features: int, n_labels: int, bias: float,
                extra: dict | None = None):
        model = super()._create(forest, n_features, n_labels, bias)
        model._arrays.update(extra or {})
        return model

    @property
    def hasTailClassifiers(self) -> bool:
        """Whether the model holds tail classifiers (it was fitted with them)."""
        return len(self._arrays["tail_indptr"]) > 0

    @property
    def inversePropensities(self) -> list:
        """The inverse label propensities used in training (for ``XMLEvaluator``)."""
        return self._arrays["inv_prop"].astype(float).tolist()

    def _check_arrays(self) -> None:
        a = self._arrays
        PfastreXMLPredictor(a, int(a["n_features"]), int(a["n_labels"]), float(a["bias"]),
                            tail_classifiers=self.hasTailClassifiers)
        if len(a["inv_prop"]) != int(a["n_labels"]):
            raise ValueError(f"inv_prop has {len(a['inv_prop'])} entries for "
                             f"n_labels={int(a['n_labels'])}")

    def _predictor_spec(self):
        cls, args = super()._predictor_spec()
        tail = bool(self.getTailClassifiers())
        if tail and not self.hasTailClassifiers:
            raise ValueError("PfastreXMLModel: tailClassifiers=True, but the model was fitted "
                             "without tail classifiers (PfastXML); set tailClassifiers=False")
        return PfastreXMLPredictor, args + (tail, float(self.getGamma()),
                                            float(self.getAlpha()),
                                            int(self.getNumCandidates()))

