"""Linear SVM training: CoCoA+ rounds over fixed "virtual blocks" of rows, on any collective.

The same code runs in one process (``LocalCollective``, e.g. tests and the kernel benchmark)
and in every task of Spark's barrier stage (``SocketCollective``):

- rows are split into ``num_blocks`` blocks by a content key (``block = key mod B``) and
  sorted by key inside a block; a task holds whole blocks (``LinearData.block_ids``);
- a round: every block solves its CoCoA+ local subproblem (adding, sigma' = B; Ma et al.
  2015, eq. (10) in liblinear's scaling: coordinate i sees the gradient through
  u = w + sigma' dw_block and the curvature sigma' |x_i|^2 + D_ii) from the global w of the
  round (``dcd.dcd_block`` or ``cs.cs_block``), writing its delta-w into its own row of a
  (B, K*d) matrix; one ``allreduce_sum`` of that matrix (each block's row is non-zero on one
  task only, and x + 0 == x, so every task receives every block's delta-w exactly) and every
  task adds the rows in block order. With one block a round is plain DCD (at most
  ``ONE_BLOCK_PASSES`` passes, then the gap is checked); with several, a block stops once its
  largest violation is below ``LOCAL_THETA`` times the global one (or tol, or
  ``LOCAL_PASSES_CAP`` passes);
- after each round of several blocks, the most violating rows of all blocks are solved
  together on rank 0 (``polish``: it removes the dual lag that CoCoA+'s separable bound
  leaves on data with many more rows than features) and the result is broadcast;
- the objective pieces and a histogram of KKT violations travel the same way, (B, K, S),
  after each step. So the model depends on the data, the seed and B, never on how many tasks
  run the blocks nor on how the input was partitioned;
- training stops when the duality gap <= tol * primal for every problem (OVR problems that
  reach it are frozen) or after ``max_iter`` rounds.

Binary: one problem, a row is positive when its label is 1. One-vs-rest: K problems trained
in the same rounds (K x d delta-w per block). Crammer-Singer: one K-class problem.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import cs as kcs
from . import dcd as kdcd
from . import polish as kpol
from ._rng import stream_state

SCHEDULES = {"permutation": kdcd.PERMUTATION, "shark": kdcd.SHARK}
LOSSES = {"hinge": kdcd.HINGE, "squared_hinge": kdcd.SQUARED_HINGE}
MULTI = ("binary", "ovr", "crammer_singer")


@dataclass
class LinearData:
    """One task's rows, grouped by block and sorted by key inside each block.

    indptr int64 (n+1,), indices int32, data float64: CSR with the bias column (index
    ``n_features - 1``) appended when the model fits an intercept; labels int32 (n,);
    cw float64 (n,) = C * row weight (> 0); qd float64 (n,) = |x_i|^2;
    block_ids int64 (nb,) global ids of the blocks held, increasing; block_ptr int64 (nb+1,).
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    labels: np.ndarray
    cw: np.ndarray
    qd: np.ndarray
    block_ids: np.ndarray
    block_ptr: np.ndarray
    n_features: int

    @property
    def n(self) -> int:
        return int(self.labels.size)

    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.indptr, self.indices, self.data, self.labels,
                                          self.cw, self.qd)))


def prepare(indptr, indices, data, labels, weights, keys, blocks, C: float,
            fit_intercept: bool, n_features: int) -> LinearData:
    """Order rows by (block, key), drop zero-weight rows, append the bias feature.

    Parameters
    ----------
    indptr, indices, data : CSR (int64, int32, float) of the raw features, width n_features
    labels : int (n,) class ids; weights : float (n,) >= 0 or None
    keys : int64 (n,) content keys; blocks : int64 (n,) block id of each row
    C : float > 0; fit_intercept : bool (a bias feature of value 1, regularised as w)
    """
    n = int(labels.size)
    indptr = np.asarray(indptr, np.int64)
    order = np.lexsort((np.asarray(keys, np.int64), np.asarray(blocks, np.int64)))
    keep = order if weights is None else order[np.asarray(weights)[order] > 0]
    lens = (indptr[1:] - indptr[:-1])[keep]
    extra = 1 if fit_intercept else 0
    new_ptr = np.zeros(keep.size + 1, np.int64)
    np.cumsum(lens + extra, out=new_ptr[1:])
    nnz = int(new_ptr[-1])
    # gather the kept rows' entries in the new order, with a slot for the bias at row end
    starts = np.repeat(indptr[:-1][keep] - new_ptr[:-1], lens)
    pos = np.arange(nnz, dtype=np.int64)
    body = np.ones(nnz, bool)
    if extra:
        body[new_ptr[1:] - 1] = False
    src = pos[body] + starts if n else pos[body]
    ind = np.empty(nnz, np.int32)
    val = np.empty(nnz, np.float64)
    ind[body] = np.asarray(indices)[src]
    val[body] = np.asarray(data, np.float64)[src]
    if extra:
        ind[~body] = n_features
        val[~body] = 1.0
    lab = np.ascontiguousarray(np.asarray(labels)[keep], np.int32)
    w = np.ones(keep.size) if weights is None else np.asarray(weights, np.float64)[keep]
    cw = C * w
    rows = np.repeat(np.arange(keep.size, dtype=np.int64), lens + extra)
    qd = np.bincount(rows, weights=val * val, minlength=keep.size)
    qd = np.ascontiguousarray(qd, np.float64)
    b = np.asarray(blocks, np.int64)[keep]
    ids, first = np.unique(b, return_index=True)
    ptr = np.append(first, keep.size).astype(np.int64)
    return LinearData(new_ptr, ind, val, lab, cw, qd, ids.astype(np.int64), ptr,
                      int(n_features) + extra)


@dataclass
class TrainResult:
    """W float64 (K, d) (K = 1 for binary), the history and solution statistics."""

    W: np.ndarray
    primal: list = field(default_factory=list)
    dual: list = field(default_factory=list)
    gap: list = field(default_factory=list)
    rounds: int = 0
    converged: bool = False
    free_sv: np.ndarray = None
    bounded_sv: np.ndarray = None
    local_passes: int = 0
    local_steps: int = 0
    polishes: int = 0
    polish_rows: int = 0
    seconds: float = 0.0
    alpha: np.ndarray = None

    def history_arrays(self) -> dict:
        return {"primal": np.asarray(self.primal), "dual": np.asarray(self.dual),
                "gap": np.asarray(self.gap)}


# Several blocks: a block's local solve stops once its KKT violation is below this fraction
# of the largest violation over all rows at the start of the round (a Theta-approximate local
# solver, Ma et al. 2015), or at tol, or after LOCAL_PASSES_CAP passes.
LOCAL_THETA = 0.25
LOCAL_PASSES_CAP = 100
ONE_BLOCK_PASSES = 10
# the rows gathered by a polish: at most this fraction of an average block (rows and nnz)
POLISH_BLOCK_FRACTION = 0.5


def default_local_passes(num_blocks: int) -> int:
    """Cap on a block's DCD passes per round. One block: rounds of ``ONE_BLOCK_PASSES``
    passes, so that the duality gap is checked every few passes (a round costs one more pass
    for the objective) and DCD stops once gap <= tol * primal rather than running on to a
    KKT tolerance that certifies a far smaller gap (a9a, hinge: 40 passes instead of 142).
    Several blocks: Theta-approximate local solves (``LOCAL_THETA``), at most
    ``LOCAL_PASSES_CAP`` passes."""
    return ONE_BLOCK_PASSES if int(num_blocks) == 1 else LOCAL_PASSES_CAP


def train(ld: LinearData, cfg: dict, collective) -> TrainResult:
    """CoCoA+ training (module docstring) on this task's blocks, in lockstep with the others.

    cfg keys: loss ('hinge' | 'squared_hinge'), multi_class ('binary' | 'ovr' |
    'crammer_singer'), n_classes, schedule ('shark' | 'permutation'), tol, max_iter (rounds),
    local_passes (cap on a block's passes per round), num_blocks, seed; optional polish
    (default True: the replicated refinement after each round of several blocks).
    """
    t0 = time.perf_counter()
    mode = cfg["multi_class"]
    if mode not in MULTI:
        raise ValueError(f"multi_class must be one of {MULTI}, got {mode!r}")
    loss = LOSSES[cfg["loss"]]
    sched = SCHEDULES[cfg["schedule"]]
    tol = float(cfg["tol"])
    B = int(cfg["num_blocks"])
    sigma = float(B)
    seed = int(cfg["seed"])
    passes_cap = int(cfg["local_passes"])
    max_iter = int(cfg["max_iter"])
    theta = LOCAL_THETA if B > 1 else 0.0
    d = ld.n_features
    n = ld.n
    Kc = int(cfg["n_classes"])
    cs = mode == "crammer_singer"
    P = 1 if mode == "binary" else Kc   # weight vectors
    NP = 1 if cs else P                  # problems with their own gap
    S = 5 if cs else 6                   # objective pieces (the last: largest violation)
    H = S + 2                            # then rows and nnz of the block, then histograms
    pos_of = [1] if mode == "binary" else list(range(Kc))
    row_nnz = np.diff(ld.indptr)
    viol = np.zeros((NP, n))
    if cs:
        upper = diag = None
        W = np.zeros((d, Kc))
        alpha = np.zeros((n, Kc))
    else:
        if loss == kdcd.HINGE:
            upper, diag = ld.cw, np.zeros(n)
        else:
            upper, diag = np.full(n, np.inf), 0.5 / ld.cw
        W = np.zeros((P, d))
        alpha = np.zeros((P, n))
        pref = np.ones((P, n))
        sstate = np.zeros((P, ld.block_ids.size, 3))
        sstate[:, :, 2] = 1.0  # Shark starts with a full sweep: it may stop after it
    index = np.empty(max(n, 1), np.int64)
    res = TrainResult(W=None, free_sv=np.zeros(NP, np.int64), bounded_sv=np.zeros(NP, np.int64))
    frozen = np.zeros(NP, bool)

    def evaluate():
        """Objective pieces, violations and their histograms at the current (W, alpha)."""
        st = np.zeros((B, NP, H + 2 * kpol.NBINS))
        for lb, b in enumerate(ld.block_ids):
            lo, hi = int(ld.block_ptr[lb]), int(ld.block_ptr[lb + 1])
            for k in range(NP):
                if cs:
                    kcs.cs_stats(ld.indptr, ld.indices, ld.data, lo, hi, ld.labels, W, alpha,
                                 ld.cw, st[b, 0, :S], viol[0])
                else:
                    kdcd.block_stats(ld.indptr, ld.indices, ld.data, lo, hi, ld.labels,
                                     pos_of[k], W[k], alpha[k], upper, diag, ld.cw, loss,
                                     st[b, k, :S], viol[k])
                st[b, k, S] = hi - lo
                st[b, k, S + 1] = ld.indptr[hi] - ld.indptr[lo]
                if B > 1:
                    kpol.histograms(viol[k, lo:hi], row_nnz[lo:hi], tol, st[b, k, H:])
        st = collective.allreduce_sum(st)
        tot = np.zeros((NP, H + 2 * kpol.NBINS))
        for b in range(B):  # block order: the same sum on every task
            tot += st[b]
        if cs:
            wsq = np.array([float(np.dot(W.ravel(), W.ravel()))])
            primal = 0.5 * wsq + tot[:, 0]
            dual = -(0.5 * wsq + tot[:, 1])
            res.free_sv[:], res.bounded_sv[:] = tot[:, 2], tot[:, 3]
        else:
            wsq = np.einsum("kd,kd->k", W, W)
            primal = 0.5 * wsq + tot[:, 0]
            dual = tot[:, 1] - 0.5 * tot[:, 2] - 0.5 * wsq
            res.free_sv[:], res.bounded_sv[:] = tot[:, 3], tot[:, 4]
        vmax = np.max(st[:, :, S - 1], axis=0)
        gap = primal - dual
        res.primal.append(primal.tolist())
        res.dual.append(dual.tolist())
        res.gap.append(gap.tolist())
        frozen[:] |= gap <= tol * np.abs(primal)
        return st, tot, vmax

    def cocoa_round(rnd, vmax):
        """Every block's local subproblem from this round's W; delta-w rows all-reduced."""
        payload = np.zeros((B, P * d))
        for lb, b in enumerate(ld.block_ids):
            lo, hi = int(ld.block_ptr[lb]), int(ld.block_ptr[lb + 1])
            if cs:
                U = W.copy()
                dW = np.zeros((d, Kc))
                rng = stream_state(seed, int(b), rnd, 0)
                p_, s_, _, _ = kcs.cs_block(ld.indptr, ld.indices, ld.data, lo, hi, ld.labels,
                                            ld.cw, ld.qd, alpha, U, dW, sigma,
                                            max(tol, theta * vmax[0]), passes_cap, rng, index)
                res.local_passes += p_
                res.local_steps += s_
                payload[b] = dW.ravel()
                continue
            for k in range(P):
                if frozen[k]:
                    continue
                u = W[k].copy()
                rng = stream_state(seed, int(b), rnd, k)
                p_, s_, _, _ = kdcd.dcd_block(ld.indptr, ld.indices, ld.data, lo, hi,
                                              ld.labels, pos_of[k], upper, diag, ld.qd,
                                              alpha[k], u, sigma, max(tol, theta * vmax[k]),
                                              passes_cap, sched, rng, index, pref[k],
                                              sstate[k, lb])
                payload[b, k * d:(k + 1) * d] = (u - W[k]) / sigma
                res.local_passes += p_
                res.local_steps += s_
        payload = collective.allreduce_sum(payload)
        flat = W.reshape(-1)
        for b in range(B):
            flat += payload[b]

    def polish_plan(st, tot):
        active = [k for k in range(NP) if not frozen[k]]
        if B == 1 or not active or not cfg.get("polish", True):
            return []
        share = POLISH_BLOCK_FRACTION / B / len(active)
        plan = []
        for k in active:
            hist = tot[k, H:]
            j0 = kpol.choose_bin(hist[:kpol.NBINS], hist[kpol.NBINS:], share * tot[k, S],
                                 share * tot[k, S + 1])
            if j0 < 0:
                continue
            rows_b = st[:, k, H + j0:H + kpol.NBINS].sum(axis=1).astype(np.int64)
            nnz_b = st[:, k, H + kpol.NBINS + j0:H + 2 * kpol.NBINS].sum(axis=1)
            plan.append((k, j0, rows_b, nnz_b.astype(np.int64)))
        return plan

    rnd = 0
    st, tot, vmax = evaluate()
    while not frozen.all() and rnd < max_iter:
        cocoa_round(rnd, vmax)
        rnd += 1
        st, tot, vmax = evaluate()
        if frozen.all():
            break
        plan = polish_plan(st, tot)
        if plan:
            res.polish_rows += kpol.polish(ld, W, alpha, viol, plan, cfg, rnd, collective)
            res.polishes += 1
            st, tot, vmax = evaluate()
    res.converged = bool(frozen.all())
    res.rounds = rnd
    res.alpha = alpha
    res.W = np.ascontiguousarray(W.T) if cs else W
    res.seconds = time.perf_counter() - t0
    return res


def fit_local(indptr, indices, data, labels, n_features: int, *, C=1.0, loss="hinge",
              multi_class="binary", n_classes=2, schedule="shark", tol=1e-3, max_iter=100,
              local_passes=None, num_blocks=1, seed=0, fit_intercept=False,
              weights=None, polish=True) -> TrainResult:
    """Train in this process on CSR data (the kernel on one core; tests and benchmarks).

    With ``num_blocks`` > 1 rows go to blocks by index (row i -> block i mod B) and the rounds
    are CoCoA+'s, exactly as a Spark fit with those blocks would run them.
    """
    from ..collective import LocalCollective

    n = int(len(labels))
    keys = np.arange(n, dtype=np.int64)
    blocks = keys % int(num_blocks)
    ld = prepare(indptr, indices, data, labels, weights, keys, blocks, float(C),
                 fit_intercept, n_features)
    if local_passes is None:
        local_passes = default_local_passes(num_blocks)
    cfg = dict(loss=loss, multi_class=multi_class, n_classes=n_classes, schedule=schedule,
               tol=tol, max_iter=max_iter, local_passes=local_passes, num_blocks=num_blocks,
               seed=seed, polish=polish)
    return train(ld, cfg, LocalCollective())
