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
"""
from __future__ import annotations

from pyspark.ml.param import Param, Params, TypeConverters

from sparkxml._core.constraints import one_of
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
