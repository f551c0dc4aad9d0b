"""Decision trees and random forests with scikit-learn's criteria (no pyspark).

criteria     gini, entropy, squared_error, friedman_mse, poisson on per-node sums
histogram    per-node statistic histograms (uint8/uint16 bins), node partitioning
splitter     scikit-learn's BestSplitter replayed on binned sums; forest feature draws
tree         scikit-learn ``tree_`` arrays, split settings
builder      one tree grown through a collective, exactly as scikit-learn grows it
ordered      one classification tree on its raw rows in scikit-learn's summation order
forest       many trees grown level-wise through a collective (the driver)
bootstrap    per-tree row counts from row content hashes
levels       a level's node splits from summed histograms; small subtrees from their rows
nodes        the forest's node store, assembled into scikit-learn's layout
oob          out-of-bag statistics and the routing arrays they need
pruning      minimal cost-complexity pruning and its path (scikit-learn's ccp_alpha)
bins         exact bins and their values
predictor    forests of ``tree_`` arrays: predict, probabilities, importances, model files
importance   permutation importance (scikit-learn's permutation_importance on arrays)
"""
from .criteria import CRITERIA, criterion_id
from .tree import SplitParams, TreeArrays

__all__ = ["CRITERIA", "criterion_id", "SplitParams", "TreeArrays"]
