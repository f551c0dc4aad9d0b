"""Histogram gradient boosting kernels (no pyspark).

Modules, one responsibility each (scikit-learn's hist-GBDT layout); binning (``sparkxml_kernels.binning``), the
collectives (``sparkxml_kernels.collective``) and inputs are shared with the other families:

histogram    per-node gradient histograms, subtraction
splitting    XGBoost's second-order split gain, leaf weights
partition    applying splits to row sets, routing binned rows to leaves
grower       one tree, depthwise or lossguide, data-parallel through a collective
loss         objectives: initial scores from reducible statistics, gradients
objectives   absolute, huber, quantile, poisson, tweedie, gamma (regression objectives)
cox          Cox proportional hazards over a global grid of times
leaf_quantile exact weighted quantiles per leaf across workers (absolute / quantile leaves)
metrics      evaluation metrics from reducible statistics
regression_metrics  mae, quantile, huber, poisson/gamma/tweedie likelihoods and deviance
predictor    flat-array tree ensembles on raw features; model arrays; leaves, tree arrays
shap         TreeSHAP feature contributions (and its exponential naive twin)
dump         text (MLlib layout) and JSON dumps of an ensemble
booster      the boosting loop (single process or one Spark task)
ranking      lambdarank / pairwise objectives, ndcg@k / map@k metrics (LambdaMART)
"""
from ..binning import (
                      Sketch,
                      bin_data,
                      edges_from_sketch,
                      merge_sketches,
                      n_bins_from_edges,
                      sketch,
)
from ..collective import InProcessGroup, LocalCollective
from .booster import BoosterParams, train
from .grower import Tree, TreeGrower, TreeParams, grow_tree
from .histogram import build_histogram, build_histograms, n_hist_slots, subtract
from .loss import Logistic, Loss, Softmax, SquaredError, make_loss, register_loss
from .predictor import TreeEnsemblePredictor
from .ranking import LambdaRank, Pairwise  # registers "lambdarank", "pairwise", "ndcg@k"
from .splitting import SplitParams, find_best_splits, leaf_weight

__all__ = [
    "Sketch", "sketch", "merge_sketches", "edges_from_sketch", "bin_data", "n_bins_from_edges",
    "build_histogram", "build_histograms", "subtract", "n_hist_slots",
    "SplitParams", "find_best_splits", "leaf_weight",
    "Tree", "TreeGrower", "TreeParams", "grow_tree",
    "LocalCollective", "InProcessGroup",
    "Loss", "SquaredError", "Logistic", "Softmax", "make_loss", "register_loss",
    "TreeEnsemblePredictor", "BoosterParams", "train", "LambdaRank", "Pairwise",
]
