"""The split-finding param of the GBT engine, XGBoost's ``tree_method`` (kernels in
``sparkxml_kernels.gbt.tree_methods``).

treeMethod : {"hist", "approx", "exact"}, default "hist"
    "hist": split candidates are the fit's bin edges (at most ``maxBins`` a feature).
    "approx": every tree proposes at most ``maxBins - 1`` candidates a feature at the
    hessian-weighted quantiles of its rows (XGBoost's global proposal), over a fine grid of
    16 x ``maxBins`` bins made once per fit. "exact": every distinct value of a feature is a
    candidate, as XGBoost's ``colmaker`` (same splits, gains and split values); the sketch
    then reads every training row (no sample), a feature may have at most 65534 distinct
    values (else the fit fails naming it), ``maxBins`` is not used, and ``growPolicy`` must
    be "depthwise". approx and exact refuse categorical features.

useQuantizedGrad : bool, default False
    LightGBM's quantised training (``sparkxml_kernels.gbt.quantize``): each tree's gradients
    and hessians are rounded to ``numGradQuantBins`` integer levels (default 4, in
    [2, 127]; stochastically unless ``stochasticRounding`` is False) and the histograms sum
    integers, about twice as fast on dense features; ``quantTrainRenewLeaf`` refits the leaf
    weights from the true gradients. The model then depends on the rounding draws, seeded
    from ``seed`` and each row's id.
"""
from __future__ import annotations

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import between, one_of
from sparkxml._core.params import param
from sparkxml_kernels.gbt.quantize import MAX_QUANT_BINS, check_quant_options
from sparkxml_kernels.gbt.tree_methods import TREE_METHODS, check_tree_method


class HasTreeMethod(Params):
    """Mixin for param treeMethod: split candidates, 'hist' (the fit's bins), 'approx' (hessian-
    weighted quantiles proposed for every tree) or 'exact' (every distinct value)."""

    treeMethod: "Param[str]" = Param(
        Params._dummy(), "treeMethod",
        "split candidates: 'hist' (the fit's bins, at most maxBins a feature), 'approx' "
        "(hessian-weighted quantiles proposed for every tree) or 'exact' (every distinct "
        "value, XGBoost's colmaker)", typeConverter=TypeConverters.toString)
    _constraints = {"treeMethod": one_of(*TREE_METHODS)}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(treeMethod="hist")

    def getTreeMethod(self) -> str:
        """Gets the value of treeMethod or its default value."""
        return self.getOrDefault(self.treeMethod)

    def _check_tree_method(self, categorical=None) -> str:
        """The method, checked against growPolicy and the categorical features (ValueError
        naming the param)."""
        return check_tree_method(self.getTreeMethod(), self.getGrowPolicy(), categorical)


# ------------------------------------------------------------------ quantised gradients
class HasUseQuantizedGrad(Params):
    """Mixin for param useQuantizedGrad: round each tree's gradients and hessians to
    numGradQuantBins integer levels and build integer histograms (LightGBM's
    use_quantized_grad): faster histograms, splits from slightly coarser statistics."""

    useQuantizedGrad: "Param[bool]" = param("useQuantizedGrad", __doc__,
                                            TypeConverters.toBoolean)

    def getUseQuantizedGrad(self) -> bool:
        """Gets the value of useQuantizedGrad or its default value."""
        return self.getOrDefault(self.useQuantizedGrad)


class HasNumGradQuantBins(Params):
    """Mixin for param numGradQuantBins: with useQuantizedGrad, the number of gradient
    levels, in [2, 127]."""

    numGradQuantBins: "Param[int]" = param("numGradQuantBins", __doc__, TypeConverters.toInt,
                                           between(2, MAX_QUANT_BINS))

    def getNumGradQuantBins(self) -> int:
        """Gets the value of numGradQuantBins or its default value."""
        return self.getOrDefault(self.numGradQuantBins)


class HasQuantTrainRenewLeaf(Params):
    """Mixin for param quantTrainRenewLeaf: with useQuantizedGrad, refit every leaf's weight
    from the true gradient and hessian sums of its rows once the tree is grown."""

    quantTrainRenewLeaf: "Param[bool]" = param("quantTrainRenewLeaf", __doc__,
                                               TypeConverters.toBoolean)

    def getQuantTrainRenewLeaf(self) -> bool:
        """Gets the value of quantTrainRenewLeaf or its default value."""
        return self.getOrDefault(self.quantTrainRenewLeaf)


class HasStochasticRounding(Params):
    """Mixin for param stochasticRounding: with useQuantizedGrad, round gradients to a level
    at random in proportion to their distance (unbiased sums), else to the nearest level."""

    stochasticRounding: "Param[bool]" = param("stochasticRounding", __doc__,
                                              TypeConverters.toBoolean)

    def getStochasticRounding(self) -> bool:
        """Gets the value of stochasticRounding or its default value."""
        return self.getOrDefault(self.stochasticRounding)


QUANTIZED_GRAD_PARAMS = ("useQuantizedGrad", "numGradQuantBins", "quantTrainRenewLeaf",
                         "stochasticRounding")


class QuantizedGradParams(HasUseQuantizedGrad, HasNumGradQuantBins, HasQuantTrainRenewLeaf,
                          HasStochasticRounding):
    """LightGBM's quantised training (``sparkxml_kernels.gbt.quantize``), with its defaults."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(useQuantizedGrad=False, numGradQuantBins=4, quantTrainRenewLeaf=False,
                         stochasticRounding=True)

    def _quantized_grad_options(self) -> dict:
        return {name: self.getOrDefault(name) for name in QUANTIZED_GRAD_PARAMS}

    def _check_quantized_grad(self, monotone) -> None:
        """Before any Spark job: renewed leaves would leave monotone bounds."""
        check_quant_options(self.getUseQuantizedGrad(), self.getQuantTrainRenewLeaf(), monotone)
