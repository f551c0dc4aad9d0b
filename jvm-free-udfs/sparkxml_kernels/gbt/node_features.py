"""The features each node of a tree may split on: column sampling by level and by node, and
feature interaction constraints, with XGBoost's semantics.

Column sampling (XGBoost's ``colsample_bylevel`` / ``colsample_bynode``) nests as XGBoost's
``ColumnSampler``: the tree's features (``colsampleByTree``, booster.py) -> a level's
features, drawn once per depth from the tree's -> a node's features, drawn from its level's.
Each draw keeps ``max(1, int(rate * n))`` of the ``n`` features it draws from, without
replacement. Every draw comes from ``numpy.random.default_rng([seed, round, output, kind,
depth or node id])``: a function of the tree's key and of the node, never of the rows, so
every rank draws the same and the model does not depend on ``numWorkers``.

Interaction constraints (XGBoost's ``interaction_constraints``, ``FeatureInteractionConstraint
Host``): a list of feature sets. The root may split on any feature. A node below splits on
the features used on its path from the root, and on every feature of every set that holds
ALL of those path features. So no path mixes features of two sets that do not share a set,
and a feature that is in no set, once split on, only lets its own subtree split on itself.

A node's mask is the AND of the sampled features and the allowed ones; an empty mask makes
it a leaf.

Differences from XGBoost: the draws use numpy's generator, not XGBoost's (so the sampled
features differ for the same seed); XGBoost also accepts per-feature sampling weights
(``feature_weights``), which are not supported here.
"""
from __future__ import annotations

import dataclasses

import numpy as np

_LEVEL, _NODE = 1, 2


def check_interaction(constraints, d: int):
    """Interaction constraints as a tuple of frozensets of feature ids (0..d-1), or None.

    Parameters
    ----------
    constraints : sequence of sequences of int, or None
    d : int
        Number of features.

    Raises
    ------
    ValueError
        When an id is not an integer in 0..d-1 or a set is empty.
    """
    if constraints is None:
        return None
    out = []
    for s in constraints:
        ids = list(s)
        if not ids:
            raise ValueError("interactionConstraints: an interaction set is empty")
        for f in ids:
            if isinstance(f, bool) or not float(f).is_integer() or not 0 <= int(f) < d:
                raise ValueError(f"interactionConstraints: feature id {f!r} is not in "
                                 f"0..{d - 1}")
        out.append(frozenset(int(f) for f in ids))
    return tuple(out) or None


def allowed_features(path, sets, d: int) -> np.ndarray:
    """uint8 (d,) mask of the features a node whose path from the root split on the features
    ``path`` (a set of ids) may split on, under interaction ``sets`` (XGBoost's rule, see the
    module docstring)."""
    mask = np.zeros(d, np.uint8)
    if not path:
        mask[:] = 1
        return mask
    mask[list(path)] = 1
    for s in sets:
        if path <= s:
            mask[list(s)] = 1
    return mask


def _draw(features, rate, key):
    """``max(1, int(rate * n))`` of ``features`` (int array), drawn by ``key``."""
    if rate >= 1.0 or features.size == 0:
        return features
    k = max(1, int(rate * features.size))
    rng = np.random.default_rng([int(v) & (2**63 - 1) for v in key])
    return np.sort(rng.choice(features, size=k, replace=False))


class NodeFeatures:
    """Per-node feature masks of one tree.

    Parameters
    ----------
    tree_mask : uint8 (d,)
        The tree's features (after ``colsampleByTree``).
    key : tuple of int
        (seed, round, output) of the tree.
    by_level, by_node : float in (0, 1]
    interaction : tuple of frozensets, optional
        From :func:`check_interaction`.
    """

    def __init__(self, tree_mask, key, by_level=1.0, by_node=1.0, interaction=None):
        self.tree_mask = np.asarray(tree_mask, np.uint8)
        self.d = self.tree_mask.size
        self.key = tuple(int(v) for v in key)
        self.by_level, self.by_node = float(by_level), float(by_node)
        self.interaction = interaction
        self._levels = {}

    @classmethod
    def make(cls, params, tree_mask, key):
        """A NodeFeatures for ``params`` (a TreeParams), or None when every node may use the
        tree's features."""
        if params.colsample_bylevel >= 1.0 and params.colsample_bynode >= 1.0 \
                and not params.interaction:
            return None
        if key is None:
            raise ValueError("column sampling by level or node needs the tree's sample key")
        return cls(tree_mask, key, params.colsample_bylevel, params.colsample_bynode,
                   params.interaction)

    def level_features(self, depth: int) -> np.ndarray:
        f = self._levels.get(depth)
        if f is None:
            f = self._levels[depth] = _draw(np.flatnonzero(self.tree_mask), self.by_level,
                                            self.key + (_LEVEL, depth))
        return f

    def mask(self, node: int, depth: int, path) -> np.ndarray:
        """uint8 (d,) mask of node ``node`` at ``depth`` whose path split on ``path``."""
        feats = _draw(self.level_features(depth), self.by_node, self.key + (_NODE, node))
        out = np.zeros(self.d, np.uint8)
        out[feats] = 1
        if self.interaction:
            out &= allowed_features(path, self.interaction, self.d)
        return out


def search_nodes(find, level, sums, masks, *args, bounds=None, node_args=None, **kwargs):
    """Run split finder ``find(hists, sums, n_bins, mask, ...)`` with a different feature
    mask per node: nodes that share a mask in one call, results merged in node order.

    ``masks`` is uint8 (m, d); ``bounds`` (m, 2) or None is passed per node as ``bounds=``,
    and so is each array of ``node_args`` (name -> array of m rows) as its keyword.
    Returns the finder's result dataclass for all ``m`` nodes.
    """
    m = masks.shape[0]
    uniq, inv = np.unique(masks, axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    parts, order = [], []
    for u in range(uniq.shape[0]):
        idx = np.flatnonzero(inv == u)
        extra = {} if bounds is None else {"bounds": bounds[idx]}
        extra.update({k: v[idx] for k, v in (node_args or {}).items()})
        hs = level if idx.size == m else level[idx]
        parts.append(find(hs, sums[idx], args[0], uniq[u], *args[1:], **extra, **kwargs))
        order.append(idx)
    if len(parts) == 1:
        return parts[0]
    pos = np.argsort(np.concatenate(order), kind="stable")
    first = parts[0]
    return type(first)(**{f.name: np.concatenate([getattr(p, f.name) for p in parts])[pos]
                          for f in dataclasses.fields(first)})
