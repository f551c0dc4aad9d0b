"""FastXML (Prabhu & Varma, KDD 2014) training and prediction kernels, numba-compiled.

Modules, by responsibility:

- ``forest``: ``train_forest`` (the public training entry) and the flattened-forest helpers
  ``concat_forests``, ``sort_forest``, ``take_trees``;
- ``tree``: the compiled tree grower (one call grows all requested trees);
- ``ndcg``: the nDCG partition step; ``logreg``: the L1 logistic-regression separator;
- ``predictor``: ``FastXMLPredictor`` (top-k prediction, loading a saved model);
- ``naive``: plain-Python twins used by the tests; ``_common``: PRNG, sort, small helpers.

Nothing here imports pyspark.
"""
from .forest import FOREST_KEYS, concat_forests, sort_forest, take_trees, train_forest
from .predictor import FastXMLPredictor

__all__ = ["FOREST_KEYS", "FastXMLPredictor", "concat_forests", "sort_forest", "take_trees",
           "train_forest"]
