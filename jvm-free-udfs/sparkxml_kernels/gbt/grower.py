"""Growing one tree, data-parallel: the seam between the kernels and the Spark layer.

Every worker runs the same :class:`TreeGrower` on its own rows; the only communication is
``collective.reduce_and_decide`` (see collective.py), called once per round:

1. each rank builds the LOCAL histograms of the nodes of this round (concatenated, C order,
   ``(m, d, n_slots, 2)`` flattened -- histogram.py);
2. rank 0 receives their sum and ``decide`` runs there: it completes the global histograms
   (siblings by subtraction from the parent's global histogram, which only rank 0 keeps),
   finds the best splits and returns the decision array;
3. every rank applies the decisions to its own rows and tree copy, and derives the next
   round's nodes to build, by the same rule, from the same decision -- so all ranks hold the
   same tree and agree on what to build without further messages.

Policies
--------
``depthwise`` (XGBoost's default): one round per level; every valid split of the level is
applied; nodes at depth ``max_depth`` are leaves. ``lossguide`` (LightGBM-style best-first):
rank 0 keeps a priority queue of candidate splits (key: gain, then node id); one round per
expansion that needs histograms; at most ``max_leaves`` leaves (0 = no limit) and depth
``max_depth`` (0 = no limit). A worker alone runs either policy's rounds in local_grower.py's
compiled loop (the same trees) where ``local_grower.eligible`` admits the tree.

Histogram subtraction: after a split only the child with the smaller global hessian sum is
built (ties: left); the other is parent - child. The hessian sum stands in for the row count
because it is global and known to every rank from the decision (equal to the count for
unweighted squared error). Children that cannot be split (depth, ``max_leaves``, or
H < 2 min_child_weight) need no histogram; a round with nothing to build ends the tree.

The decision array each round sends to every rank is laid out in decision.py.

Dense binned data, uint8 or uint16, take the histogram.py/partition.py kernels (the partition
reads a column-major copy, also for category-set splits); sparse binned data take the binned.py
kernels. Categorical features (``TreeParams.categorical``) add categorical.py's split search
beside the numerical one.
"""
from __future__ import annotations

import heapq
import inspect
from dataclasses import dataclass, field

import numpy as np

from .._dtypes import FLOAT, INDEX, NODE
from ..collective import LocalCollective
from ..threads import worth_threads
from . import local_grower
from .binned import (
    as_binned,
    build_histograms_any,
    is_sparse,
    partition_nodes_any,
    route_binned_any,
)
from .categorical import (
    CatParams,
    find_categorical_splits,
    n_set_words,
)
from .decision import HEADER, REC, split_record
from .histogram import (
    HistogramStore,
    copy_used,
    has_missing_bins,
    interleave,
    n_hist_slots,
    subtract_used,
)
from .histogram_quantized import build_histograms_quantized
from .node_features import NodeFeatures, search_nodes
from .partition import _leaf_index, _leaf_index_parallel, column_copy
from .quantize import scale_histograms
from .splitting import (
    SplitParams,
    bounded_leaf_weight,
    check_monotone,
    child_bounds,
    find_best_splits,
    leaf_weight,
)

# bins whose hessian sum is below this fraction of the root's count as empty when choosing
# thresholds: far above the rounding noise of subtracted histograms (splitting.py)
EMPTY_REL = 1e-11


@dataclass(frozen=True)
class TreeParams:
    """Tree shape and regularisation.

    grow_policy : "depthwise" | "lossguide"
    max_depth : int      depthwise: >= 0 (0 = root only); lossguide: 0 = unlimited
    max_leaves : int     lossguide only; 0 = unlimited
    learning_rate : float  leaf values are stored multiplied by it
    split : SplitParams
    monotone : tuple of int, optional   per-feature monotone constraint (-1, 0, 1); None = none
    categorical : tuple of int, optional   categorical features (categorical.py)
    cat : CatParams   the categorical split knobs
    interaction : tuple of frozensets, optional   interaction constraints (node_features.py)
    colsample_bylevel, colsample_bynode : float in (0, 1]   column sampling (node_features.py)
    """

    grow_policy: str = "depthwise"
    max_depth: int = 6
    max_leaves: int = 0
    learning_rate: float = 0.1
    split: SplitParams = field(default_factory=SplitParams)
    monotone: tuple | None = None
    categorical: tuple | None = None
    cat: CatParams = field(default_factory=CatParams)
    interaction: tuple | None = None
    colsample_bylevel: float = 1.0
    colsample_bynode: float = 1.0

    def __post_init__(self):
        for name in ("colsample_bylevel", "colsample_bynode"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if self.grow_policy not in ("depthwise", "lossguide"):
            raise ValueError(f"growPolicy must be depthwise or lossguide, got "
                             f"{self.grow_policy!r}")
        if self.max_depth < 0 or self.max_leaves < 0:
            raise ValueError("maxDepth and maxLeaves must be >= 0")
        if self.grow_policy == "lossguide" and self.max_leaves == 1:
            raise ValueError("maxLeaves must be 0 (unlimited) or >= 2")
        if self.categorical and self.monotone is not None and any(
                self.monotone[f] for f in self.categorical if f < len(self.monotone)):
            raise ValueError("a categorical feature cannot have a monotone constraint")


@dataclass
class Tree:
    """One tree as flat node arrays; node 0 is the root, leaves have ``left == -1``.

    feature int32, bin int32 (bin threshold), threshold float64 (raw; x <= threshold goes
    left), default_left uint8 (where NaN goes), left/right int32 (tree-local ids, -1 for
    leaves), value float64 (leaf weight x learning rate, set on every node), gain float64
    (split gain, 0 on leaves), cover float64 (hessian sum). Trees grown with categorical
    features also have ``is_cat`` uint8 (N,) and ``cat_sets`` uint32 (N, W): the bins that go
    left at categorical splits (None otherwise).
    """

    feature: np.ndarray
    bin: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    cover: np.ndarray
    is_cat: np.ndarray | None = None
    cat_sets: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return self.feature.size

    @property
    def n_leaves(self) -> int:
        return int((self.left < 0).sum())


_UNBOUNDED = (-np.inf, np.inf)


class _State:
    """Per-tree growth state; identical on every rank except ``store``/``heap`` (rank 0)."""

    def __init__(self, n_rows, store):
        self.feature, self.bin, self.threshold, self.default_left = [], [], [], []
        self.left, self.right, self.gain = [], [], []
        self.G, self.H, self.depth, self.start, self.end = [], [], [], [], []
        # monotone constraints only: each node's weight bounds and its parent's (which clamp
        # its own value, as XGBoost's ApplyTreeSplit does)
        self.bounds, self.value_bounds = [], []
        self.is_cat, self.sets = [], []
        self.paths = {0: frozenset()}       # node -> features split on above it
        self.add_node(0, 0, n_rows, 0.0, 0.0)
        self.pending = [(0, -1, -1)]        # (node to build, sibling, parent)
        self.n_leaves = 1
        self.round = 0
        self.store = store                  # node -> global histogram (rank 0)
        self.rows = {}                      # node -> rows over all ranks (rank 0, categorical)
        self.heap = []                      # lossguide candidates (rank 0)
        self.scale = None                   # quantised gradients: (scale_g, scale_h)

    def add_node(self, depth, start, end, G, H, bounds=_UNBOUNDED, value_bounds=_UNBOUNDED):
        self.bounds.append(bounds)
        self.value_bounds.append(value_bounds)
        self.is_cat.append(0)
        self.sets.append(None)
        self.feature.append(-1)
        self.bin.append(-1)
        self.threshold.append(np.nan)
        self.default_left.append(0)
        self.left.append(-1)
        self.right.append(-1)
        self.gain.append(0.0)
        self.G.append(G)
        self.H.append(H)
        self.depth.append(depth)
        self.start.append(start)
        self.end.append(end)
        return len(self.feature) - 1


class TreeGrower:
    """Grows trees on one worker's binned rows (see the module docstring).

    Parameters
    ----------
    binned : uint8 or uint16 (n, d), C order, or binned.SparseBinned
        This worker's rows, from ``binning.bin_data`` / ``binned.bin_matrix``.
    n_bins : int32 (d,)
        Real bins per feature (``binning.n_bins_from_edges(edges)``), same on all ranks.
    edges : list of float64 arrays
        Bin edges, for raw thresholds.
    params : TreeParams
    collective : LocalCollective-like, optional
    n_threads : int
        Threads for histogram building and partitioning (set numba's pool first with
        ``threads.use_threads``); trees are identical whatever ``n_threads``.
    compiled : bool
        Grow the trees ``local_grower.eligible`` admits (one worker on one thread) in that
        module's one compiled loop, the same trees; False grows every tree round by round.
    """

    def __init__(self, binned, n_bins, edges, params: TreeParams, collective=None,
                 n_threads=1, compiled=True):
        self.binned = as_binned(binned)
        if len(self.binned.shape) != 2:
            raise ValueError("binned must be 2-D (n, d)")
        self.n_bins = np.ascontiguousarray(n_bins, np.int32)
        if self.n_bins.size != self.binned.shape[1] or len(edges) != self.n_bins.size:
            raise ValueError("binned, n_bins and edges disagree on the number of features")
        self.edges = edges
        self.params = params
        self._mono = check_monotone(params.monotone, self.n_bins.size)
        self.collective = collective if collective is not None else LocalCollective()
        try:  # collectives written to the two-argument contract still work
            takes = "consume" in inspect.signature(self.collective.reduce_and_decide).parameters
        except (TypeError, ValueError):
            takes = False
        self._consume = {"consume": True} if takes else {}
        self.n_slots = n_hist_slots(self.n_bins)
        # mostly unused slots (narrow features beside a wide one): the candidates' histograms
        # are completed on the used slots only (histogram.subtract_used); otherwise whole, as
        # numpy's vectorised subtraction is faster there (6 us against 9 us a node of
        # 50 x 257 slots)
        self._gaps = 2 * (int(self.n_bins.sum()) + self.n_bins.size) < \
            self.n_bins.size * self.n_slots
        self.n_threads = int(n_threads)
        self.compiled = bool(compiled)
        d = self.n_bins.size
        self._store = HistogramStore((d, self.n_slots, 2))
        self._cat_mask = None
        self._rec = REC
        self._W = 0
        if params.categorical:
            cats = np.asarray(params.categorical, np.int64)
            if cats.min() < 0 or cats.max() >= d:
                raise ValueError(f"categorical feature ids {cats.tolist()} outside 0..{d - 1}")
            self._cat_mask = np.zeros(d, np.uint8)
            self._cat_mask[cats] = 1
            self._W = n_set_words(self.n_slots)
            self._rec = REC + 1 + self._W
        n = self.binned.shape[0]
        # dense bins: a column-major copy for the partition kernels (partition.py; n x d
        # more bins, and splitting takes a third of the time)
        self._columns = None if is_sparse(self.binned) else column_copy(self.binned)
        # dense data without NaN: the histogram kernels skip the missing-bin check (~10%)
        self._has_missing = True if self._columns is None else has_missing_bins(self.binned)
        self._partition = np.empty(n, INDEX)
        self._scratch = np.empty(n, INDEX)
        self._gradhess = np.empty((n, 2), FLOAT)
        # Histogram arrays kept from round to round (_buffer): fresh ones of megabytes each
        # round cost page faults -- measured 5 ms a tree of 1M x 50 at depth 6, against
        # 0.7 ms reused. "local": this rank's histograms of a round (no view of them
        # outlives the round: _decide copies what it keeps); "level0"/"level1": the
        # candidates' global histograms of even/odd rounds, depthwise only, where the
        # parents a round reads are the previous round's candidates and nothing older.
        self._bufs = {}

    # ----------------------------------------------------------------------------------------
    def grow(self, grad, hess, rows=None, feature_mask=None, sample_key=None, quant=None):
        """Grow one tree.

        Parameters
        ----------
        grad, hess : float64 (n,)
            This worker's gradients and hessians (rows not in ``rows`` are ignored).
        rows : int32 (k,), ascending, optional
            Rows taking part (row subsampling); default all rows.
        feature_mask : uint8 (d,), optional
            Features allowed to split (column sampling); default all. Same on all ranks.
        sample_key : tuple of int, optional
            (seed, round, output) of this tree: seeds the per-level and per-node column
            draws (``node_features.py``); needed with colsample_bylevel/bynode < 1.
        quant : (int32 (n,), (float, float), int), optional
            Quantised gradients (quantize.py): ``grad`` and ``hess`` hold the integer levels,
            this tuple their packed words, (gradient scale, hessian scale) and the number of
            levels. Histograms sum the levels (integer kernels on dense bins) and are scaled
            before the split search.

        Returns
        -------
        tree : Tree
        leaf_index : int32 (n,)
            Leaf of every local row (rows outside ``rows`` routed through the tree too), so
            raw scores update as ``raw += tree.value[leaf_index]``.
        """
        binned = self.binned
        n, d = binned.shape
        if np.shape(grad) != (n,) or np.shape(hess) != (n,):
            raise ValueError(f"grad and hess must have shape ({n},)")
        mask = np.ones(d, np.uint8) if feature_mask is None \
            else np.ascontiguousarray(feature_mask, np.uint8)
        features = np.flatnonzero(mask).astype(INDEX)
        hist_features = features if features.size else np.zeros(1, INDEX)
        if rows is None:
            k = n
            self._partition[:] = np.arange(n, dtype=INDEX)
        else:
            rows = np.asarray(rows, INDEX)
            k = rows.size
            self._partition[:k] = rows
        st = _State(k, self._store)
        st.nodes = NodeFeatures.make(self.params, mask, sample_key)
        packed = None
        if quant is not None:
            st.scale = quant[1]
            if self._columns is not None:  # dense bins: the int32 kernels
                packed = quant[0]
        gradhess = None if packed is not None else \
            interleave(grad, hess, self._gradhess, self.n_threads)

        # this tree's features for each search (None: no feature to search)
        num_mask = mask if self._cat_mask is None else mask & (1 - self._cat_mask)
        cat_mask = None if self._cat_mask is None else mask & self._cat_mask
        searches = (num_mask if num_mask.any() else None,
                    cat_mask if cat_mask is not None and cat_mask.any() else None)

        if features.size and local_grower.eligible(self, st.nodes):
            grown = local_grower.grow_local(self, gradhess, k, hist_features, searches,
                                            EMPTY_REL, quant)
            return self._finish(grown, k, rows)

        def decide(summed):
            return self._decide(st, summed, searches, hist_features)

        while st.pending:
            local, payload = self._local(st)
            starts = [st.start[b] for b, _, _ in st.pending]
            ends = [st.end[b] for b, _, _ in st.pending]
            if packed is None:
                build_histograms_any(binned, self._partition, starts, ends, gradhess, local,
                                     hist_features, self.n_threads, self._has_missing)
            else:
                build_histograms_quantized(binned, self._partition, starts, ends, packed, local,
                                           quant[2], hist_features, self.n_threads,
                                           self._has_missing)
            # (payload is this round's own array: a collective that can may sum into it)
            dec = self.collective.reduce_and_decide(payload, decide, **self._consume)
            self._apply(st, np.asarray(dec, FLOAT))
            st.round += 1
        st.store.clear()
        st.heap.clear()
        return self._finish(st, k, rows)

    def _local(self, st):
        """This round's local histograms, zeroed, (m, d, n_slots, 2), and the flat array the
        collective sums: the histograms, followed, with categorical features, by each
        node's local row count (categorical.py estimates a category's rows from them)."""
        m = len(st.pending)
        if self._cat_mask is None:
            local = self._buffer("local", m)
            local.fill(0.0)
            return local, local.reshape(-1)
        d = self.binned.shape[1]
        nh = m * d * self.n_slots * 2
        buf = self._bufs.get("local")
        if buf is None or buf.size < nh + m:
            buf = self._bufs["local"] = np.empty(nh + m, FLOAT)
        payload = buf[:nh + m]
        payload[:nh] = 0.0
        payload[nh:] = [st.end[b] - st.start[b] for b, _, _ in st.pending]
        return payload[:nh].reshape(m, d, self.n_slots, 2), payload

    def _buffer(self, name, m):
        """The first ``m`` histograms of the kept array ``name`` (grown when too small)."""
        buf = self._bufs.get(name)
        if buf is None or buf.shape[0] < m:
            d = self.binned.shape[1]
            buf = self._bufs[name] = np.empty((max(m, 1), d, self.n_slots, 2), FLOAT)
        return buf[:m]

    # ----------------------------------------------------------------------------------------
    def _can_expand(self, depth, H, n_leaves):
        p = self.params
        if p.grow_policy == "depthwise":
            if depth >= p.max_depth:
                return False
        else:
            if p.max_depth > 0 and depth >= p.max_depth:
                return False
            if p.max_leaves > 0 and n_leaves >= p.max_leaves:
                return False
        return H > 0.0 and H >= 2.0 * p.split.min_child_weight

    def _decide(self, st, summed, searches, hist_features):
        """Rank 0: complete the histograms of this round, choose splits, encode them."""
        d, S = self.binned.shape[1], self.n_slots
        m = len(st.pending)
        summed = np.asarray(summed, FLOAT)
        hists = summed[:m * d * S * 2].reshape(m, d, S, 2)
        if st.scale is not None:  # integer sums of quantised gradients
            scale_histograms(hists, st.scale)
        if self._cat_mask is not None:  # rows of the nodes built, then of their siblings
            rows = summed[m * d * S * 2:]
            for j, (b, s, p) in enumerate(st.pending):
                st.rows[b] = rows[j]
                if s >= 0:
                    st.rows[s] = st.rows[p] - rows[j]
        header = np.zeros(HEADER, FLOAT)
        source = {}  # candidate node -> (j, parent): hists[j], or store[parent] - hists[j]
        for j, (b, s, p) in enumerate(st.pending):
            if p < 0:  # the root: its global sums come from its histogram
                G, H = hists[j, hist_features[0]].sum(axis=0)
                header[1], header[2] = G, H
                st.G[0], st.H[0] = float(G), float(H)
            for c, par in ((b, -1), (s, p)):
                if c >= 0 and self._can_expand(st.depth[c], st.H[c], st.n_leaves):
                    source[c] = (j, par)
        cands = sorted(source)
        # the candidates' histograms in one array, siblings subtracted straight into it
        level = self._buffer(f"level{st.round % 2}", len(cands)) \
            if self.params.grow_policy == "depthwise" else st.store.level(len(cands))
        for i, c in enumerate(cands):
            j, par = source[c]
            if not self._gaps:
                if par < 0:
                    level[i] = hists[j]
                else:
                    np.subtract(st.store[par], hists[j], out=level[i])
            elif par < 0:
                copy_used(hists[j], level[i], self.n_bins)
            else:
                subtract_used(st.store[par], hists[j], level[i], self.n_bins)
        for _, _, p in st.pending:
            st.store.pop(p)
        recs = []
        if cands:
            bounds = None if self._mono is None else np.array([st.bounds[c] for c in cands])
            sums = np.array([[st.G[c], st.H[c]] for c in cands], FLOAT)
            num_mask, cat_mask = searches
            res = cres = None
            if st.nodes is not None:  # a mask per node: column sampling, interaction constraints
                masks = np.array([st.nodes.mask(c, st.depth[c], st.paths[c]) for c in cands])
            if num_mask is not None and st.nodes is None:
                res = find_best_splits(level, sums, self.n_bins, num_mask, self.params.split,
                                       self.edges, EMPTY_REL * st.H[0], self._mono, bounds)
            elif num_mask is not None:
                res = search_nodes(find_best_splits, level, sums, masks & num_mask, self.n_bins,
                                   self.params.split, self.edges, EMPTY_REL * st.H[0],
                                   self._mono, bounds=bounds)
            if cat_mask is not None:
                cat_args = (self.n_bins, self.params.split, self.params.cat, EMPTY_REL * st.H[0])
                counts = np.array([st.rows[c] for c in cands], FLOAT)
                cres = (find_categorical_splits(level, sums, cat_args[0], cat_mask,
                                                *cat_args[1:], counts=counts)
                        if st.nodes is None else
                        search_nodes(find_categorical_splits, level, sums, masks & cat_mask,
                                     *cat_args, node_args={"counts": counts}))
            for i, c in enumerate(cands):
                rec = split_record(c, res, cres, i, self._W)
                if rec is None:
                    continue
                st.store.hold(c, level, i)  # may become a parent
                recs.append(rec)
        if self.params.grow_policy == "depthwise":
            out = recs
        else:
            for r in recs:
                heapq.heappush(st.heap, (-r[5], int(r[0]), r))
            out = []
            n_leaves = st.n_leaves
            p = self.params
            while st.heap and (p.max_leaves == 0 or n_leaves < p.max_leaves):
                _, node, r = heapq.heappop(st.heap)
                out.append(r)
                n_leaves += 1
                if self._children_need_hist(st.depth[node] + 1, r[7], r[9], n_leaves):
                    break
                st.store.pop(node)
        for r in out:  # parents keep their histogram only if their children will be built
            node = int(r[0])
            if not self._children_need_hist(st.depth[node] + 1, r[7], r[9],
                                            st.n_leaves + len(out)):
                st.store.pop(node)
        st.store.done(level)
        header[0] = len(out)
        return np.concatenate([header] + out) if out else header

    def _children_need_hist(self, depth, HL, HR, n_leaves):
        return self._can_expand(depth, HL, n_leaves) or self._can_expand(depth, HR, n_leaves)

    def _apply(self, st, dec):
        """Every rank: apply the decision to the tree copy and the local rows."""
        n_rec = int(dec[0])
        if st.round == 0:
            st.G[0], st.H[0] = float(dec[1]), float(dec[2])
        recs = dec[HEADER:HEADER + n_rec * self._rec].reshape(n_rec, self._rec)
        if n_rec == 0:
            st.pending = []
            return
        nodes = recs[:, 0].astype(np.int64)
        starts = np.array([st.start[c] for c in nodes], np.int64)
        ends = np.array([st.end[c] for c in nodes], np.int64)
        is_cat = sets = None
        if self._rec > REC:
            is_cat = recs[:, REC].astype(np.uint8)
            sets = recs[:, REC + 1:].astype(np.uint32)
        n_left = partition_nodes_any(self.binned, self._partition, self._scratch, starts, ends,
                                     recs[:, 1].astype(np.int32), recs[:, 2].astype(np.int32),
                                     recs[:, 3].astype(np.uint8), is_cat, sets,
                                     self.n_threads, self._columns)
        pending = []
        for i, r in enumerate(recs):
            p = int(r[0])
            depth = st.depth[p] + 1
            mid = int(starts[i] + n_left[i])
            pb = st.bounds[p]
            lb = rb = pb
            if self._mono is not None:
                sp = self.params.split
                lb, rb = child_bounds(self._mono[int(r[1])], pb,
                                      bounded_leaf_weight(r[6], r[7], sp, *pb),
                                      bounded_leaf_weight(r[8], r[9], sp, *pb))
            lc = st.add_node(depth, int(starts[i]), mid, float(r[6]), float(r[7]), lb, pb)
            rc = st.add_node(depth, mid, int(ends[i]), float(r[8]), float(r[9]), rb, pb)
            st.feature[p], st.bin[p] = int(r[1]), int(r[2])
            st.default_left[p], st.threshold[p], st.gain[p] = int(r[3]), float(r[4]), float(r[5])
            st.left[p], st.right[p] = lc, rc
            if st.nodes is not None:  # (only per-node feature masks read the paths)
                st.paths[lc] = st.paths[rc] = st.paths[p] | {int(r[1])}
            if is_cat is not None and is_cat[i]:
                st.is_cat[p], st.sets[p] = 1, sets[i]
            st.n_leaves += 1
            if self._children_need_hist(depth, st.H[lc], st.H[rc], st.n_leaves):
                small, big = (lc, rc) if st.H[lc] <= st.H[rc] else (rc, lc)
                pending.append((small, big, p))
        st.pending = pending

    def _finish(self, st, k, rows):
        sp = self.params.split
        lr = self.params.learning_rate
        tree = Tree(
            feature=np.array(st.feature, NODE), bin=np.array(st.bin, np.int32),
            threshold=np.array(st.threshold, FLOAT),
            default_left=np.array(st.default_left, np.uint8),
            left=np.array(st.left, NODE), right=np.array(st.right, NODE),
            value=np.array([leaf_weight(G, H, sp) * lr for G, H in zip(st.G, st.H)]
                           if self._mono is None else
                           [bounded_leaf_weight(G, H, sp, *b) * lr
                            for G, H, b in zip(st.G, st.H, st.value_bounds)], FLOAT),
            gain=np.array(st.gain, FLOAT), cover=np.array(st.H, FLOAT))
        if self._cat_mask is not None:
            tree.is_cat = np.array(st.is_cat, np.uint8)
            tree.cat_sets = np.zeros((tree.n_nodes, self._W), np.uint32)
            for node in np.flatnonzero(tree.is_cat):
                tree.cat_sets[node] = st.sets[node]
        n = self.binned.shape[0]
        leaf_index = np.empty(n, NODE)
        leaves = np.flatnonzero(tree.left < 0).astype(np.int64)
        starts = np.array([st.start[i] for i in leaves], np.int64)
        ends = np.array([st.end[i] for i in leaves], np.int64)
        # every leaf's slice of the partition: disjoint writes, the same on any threads
        kernel = _leaf_index_parallel if self.n_threads > 1 and worth_threads(
            np.array([k])) else _leaf_index
        kernel(self._partition, starts, ends, leaves.astype(NODE), leaf_index)
        if k < n:
            outside = np.ones(n, bool)
            outside[rows] = False
            other = np.flatnonzero(outside).astype(INDEX)
            leaf_index[other] = route_binned_any(self.binned, tree, other)
        return tree, leaf_index


def grow_tree(binned, grad, hess, edges, params: TreeParams, collective=None, rows=None,
              feature_mask=None, n_bins=None, n_threads=1, sample_key=None):
    """One-shot helper: ``TreeGrower(...).grow(grad, hess, rows, feature_mask, sample_key)``."""
    if n_bins is None:
        n_bins = np.array([len(e) + 1 for e in edges], np.int32)
    return TreeGrower(binned, n_bins, edges, params, collective,
                      n_threads).grow(grad, hess, rows, feature_mask, sample_key)


# the naive twin lives in its own module (it imports this one)
from .grower_naive import grow_tree_naive  # noqa: E402,F401
