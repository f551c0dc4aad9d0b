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

from ..memory import release_freed
from . import cs as kcs
from . import dcd as kdcd
from . import newton as knewton
from . import polish as kpol
from ._rng import stream_state
from .data import LinearData, prepare  # noqa: F401  (solver.prepare: the public spelling)

SCHEDULES = {"permutation": kdcd.PERMUTATION, "shark": kdcd.SHARK}
LOSSES = {"hinge": kdcd.HINGE, "squared_hinge": kdcd.SQUARED_HINGE}
MULTI = ("binary", "ovr", "crammer_singer")


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
    timings: dict = field(default_factory=lambda: {"evaluate": 0.0, "local": 0.0,
                                                    "polish": 0.0, "allreduce": 0.0})
    alpha: np.ndarray = None

    def history_arrays(self) -> dict:
        return {"primal": np.asarray(self.primal), "dual": np.asarray(self.dual),
                "gap": np.asarray(self.gap)}


# Several blocks: a block's local solve stops once its KKT violation is below this fraction
# of the largest violation over all rows at the start of the round (a Theta-approximate local
# solver, Ma et al. 2015), or at tol, or after LOCAL_PASSES_CAP passes.
LOCAL_THETA = 0.5
LOCAL_PASSES_CAP = 40
ONE_BLOCK_PASSES = 10
# the rows gathered by a polish: at most this fraction of an average block (rows and nnz).
# Larger polishes save rounds (a9a squared hinge, 2 blocks: 4 rounds at 0.5, 6 at 0.25; 8
# blocks: 25 and 68); rank 0 holds 2 x 8 bytes per gathered entry, so 0.25 keeps a worker
# holding one block under 2x its CSR.
POLISH_BLOCK_FRACTION = 0.25
# ... or up to these many rows and entries where that is more (a few MB whatever the data:
# small and moderate data sets are polished more thoroughly, in fewer rounds)
POLISH_MIN_ROWS = 16_384
POLISH_MIN_NNZ = 1 << 20


# solver "auto": primal Newton (``newton``) when a problem has at most this many weights
# (features + bias) and the all-reduced Hessians, blocks x problems x weights^2 float64, stay
# under NEWTON_MAX_PAYLOAD values (128 MiB); dual coordinate descent (CoCoA+) otherwise
NEWTON_MAX_WEIGHTS = 512
NEWTON_MAX_PAYLOAD = 1 << 24
SOLVERS = ("auto", "newton", "dcd")


def choose_solver(solver: str, multi_class: str, n_weights: int, n_problems: int,
                  num_blocks: int) -> str:
    """The solver a fit uses: Crammer-Singer is always ``dcd``; ``auto`` is ``newton`` when
    the weights are few (``NEWTON_MAX_WEIGHTS``, ``NEWTON_MAX_PAYLOAD``), else ``dcd``."""
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if multi_class == "crammer_singer":
        return "dcd"
    if solver != "auto":
        return solver
    small = (n_weights <= NEWTON_MAX_WEIGHTS
             and num_blocks * n_problems * n_weights * n_weights <= NEWTON_MAX_PAYLOAD)
    return "newton" if small else "dcd"


def default_local_passes(num_blocks: int, multi_class: str = "binary") -> int:
    """Cap on a block's passes per round. One block, binary and one-vs-rest: rounds of
    ``ONE_BLOCK_PASSES`` DCD passes, so that the duality gap is checked every few passes (a
    round costs one more pass for the objective) and DCD stops once gap <= tol * primal
    rather than running on to a KKT tolerance that certifies a far smaller gap (a9a, hinge: 40
    passes instead of 142). One block, Crammer-Singer: one round to liblinear's own stop (its
    shrinking restarts with every call, so short rounds would stall: dna, 100 rounds of 10
    passes left the gap at 1.1e-3). Several blocks: Theta-approximate local solves
    (``LOCAL_THETA``), at most ``LOCAL_PASSES_CAP`` passes."""
    if int(num_blocks) > 1:
        return LOCAL_PASSES_CAP
    return 1000 if multi_class == "crammer_singer" else ONE_BLOCK_PASSES


def train(ld: LinearData, cfg: dict, collective) -> TrainResult:
    """CoCoA+ training (module docstring) on this task's blocks, in lockstep with the others.

    cfg keys: loss ('hinge' | 'squared_hinge'), multi_class ('binary' | 'ovr' |
    'crammer_singer'), n_classes, solver ('dcd', the default, or 'newton': ``newton.train``,
    binary and one-vs-rest only; see ``choose_solver``), schedule ('shark' | 'permutation'), tol, max_iter (rounds),
    local_passes (cap on a block's passes per round), num_blocks, seed; optional polish
    (default True: the replicated refinement after each round of several blocks) and
    on_round (``f(round, max_iter, {"primal": p, "gap": g})`` after each round, 1-based,
    e.g. a ``progress.ProgressReporter``'s ``progress``).
    """
    t0 = time.perf_counter()
    mode = cfg["multi_class"]
    if mode not in MULTI:
        raise ValueError(f"multi_class must be one of {MULTI}, got {mode!r}")
    if cfg.get("solver", "dcd") == "newton" and mode != "crammer_singer":
        res = knewton.train(ld, cfg, collective, TrainResult(W=None))
        res.seconds = time.perf_counter() - t0
        return res
    loss = LOSSES[cfg["loss"]]
    sched = SCHEDULES[cfg["schedule"]]
    tol = float(cfg["tol"])
    B = int(cfg["num_blocks"])
    sigma = float(B)
    seed = int(cfg["seed"])
    passes_cap = int(cfg["local_passes"])
    max_iter = int(cfg["max_iter"])
    theta = float(cfg.get("local_theta", LOCAL_THETA)) if B > 1 else 0.0
    d = ld.n_features
    n = ld.n
    Kc = int(cfg["n_classes"])
    cs = mode == "crammer_singer"
    P = 1 if mode == "binary" else Kc   # weight vectors
    NP = 1 if cs else P                  # problems with their own gap
    S = 5 if cs else 6                   # objective pieces (the last: largest violation)
    H = S + 2                            # then rows and nnz of the block, then histograms
    pos_of = [1] if mode == "binary" else list(range(Kc))
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
        t_ = time.perf_counter()
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
                    kpol.histograms(viol[k, lo:hi], ld.indptr[lo:hi + 1], tol, st[b, k, H:])
        t1 = time.perf_counter()
        st = collective.allreduce_sum(st)
        res.timings["allreduce"] += time.perf_counter() - t1
        res.timings["evaluate"] += t1 - t_
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
        t_ = time.perf_counter()
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
        t1 = time.perf_counter()
        payload = collective.allreduce_sum(payload)
        res.timings["allreduce"] += time.perf_counter() - t1
        res.timings["local"] += t1 - t_
        flat = W.reshape(-1)
        for b in range(B):
            flat += payload[b]
        del payload
        release_freed()  # the round's temporaries: a polish or the next round reuses the pages

    def polish_plan(st, tot):
        active = [k for k in range(NP) if not frozen[k]]
        if B == 1 or not active or not cfg.get("polish", True):
            return []
        share = POLISH_BLOCK_FRACTION / B
        plan = []
        for k in active:
            hist = tot[k, H:]
            row_cap = max(share * tot[k, S], POLISH_MIN_ROWS) / len(active)
            nnz_cap = max(share * tot[k, S + 1], POLISH_MIN_NNZ) / len(active)
            j0 = kpol.choose_bin(hist[:kpol.NBINS], hist[kpol.NBINS:], row_cap, nnz_cap)
            if j0 < 0:
                continue
            rows_b = st[:, k, H + j0:H + kpol.NBINS].sum(axis=1).astype(np.int64)
            nnz_b = st[:, k, H + kpol.NBINS + j0:H + 2 * kpol.NBINS].sum(axis=1)
            plan.append((k, j0, rows_b, nnz_b.astype(np.int64)))
        return plan

    on_round = cfg.get("on_round")
    rnd = 0
    st, tot, vmax = evaluate()
    while not frozen.all() and rnd < max_iter:
        cocoa_round(rnd, vmax)
        rnd += 1
        st, tot, vmax = evaluate()
        if on_round is not None:
            on_round(rnd, max_iter, {"primal": float(sum(res.primal[-1])),
                                     "gap": float(sum(res.gap[-1]))})
        if frozen.all():
            break
        plan = polish_plan(st, tot)
        if plan:
            t_ = time.perf_counter()
            res.polish_rows += kpol.polish(ld, W, alpha, viol, plan, cfg, rnd, collective)
            release_freed()
            res.timings["polish"] += time.perf_counter() - t_
            res.polishes += 1
            st, tot, vmax = evaluate()
    res.converged = bool(frozen.all())
    res.rounds = rnd
    res.alpha = alpha
    res.W = np.ascontiguousarray(W.T) if cs else W
    res.seconds = time.perf_counter() - t0
    return res


def warm_up(crammer_singer: bool = False) -> None:
    """Load (or compile) the kernels a fit calls, on a four-row problem: a Spark task does it
    while it waits for its peers' addresses, not inside the timed rounds."""
    ip = np.array([0, 1, 2, 3, 4], np.int64)
    ix = np.array([0, 1, 0, 1], np.int32)
    vx = np.array([1.0, 1.0, -1.0, -1.0])
    lab = np.array([1, 0, 0, 2] if crammer_singer else [1, 0, 0, 1], np.int32)
    if crammer_singer:
        fit_local(ip, ix, vx, lab, 2, multi_class="crammer_singer", n_classes=3, max_iter=2,
                  num_blocks=2)
    else:
        fit_local(ip, ix, vx, lab, 2, max_iter=2, num_blocks=2)


def fit_local(indptr, indices, data, labels, n_features: int, *, C=1.0, loss="hinge",
              multi_class="binary", n_classes=2, schedule="shark", tol=1e-3, max_iter=100,
              local_passes=None, num_blocks=1, seed=0, fit_intercept=False,
              weights=None, polish=True, solver="dcd") -> TrainResult:
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
        local_passes = default_local_passes(num_blocks, multi_class)
    cfg = dict(loss=loss, multi_class=multi_class, n_classes=n_classes, schedule=schedule,
               tol=tol, max_iter=max_iter, local_passes=local_passes, num_blocks=num_blocks,
               seed=seed, polish=polish, solver=solver)
    return train(ld, cfg, LocalCollective())
