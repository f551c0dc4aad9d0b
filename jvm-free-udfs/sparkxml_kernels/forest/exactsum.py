"""Sums of float64 statistics that do not depend on the order rows are added in, nor on how
rows are spread over ranks: what makes a tree the same for any partitioning and numWorkers.

A float64 sum depends on the order of its terms; a sum of integer multiples of one power of
two ``u`` does not, as long as every partial sum stays below ``2**53 * u`` (each is then
exact). So each term ``x`` of statistic ``s`` is split into levels (pre-rounding, as in
Demmel and Nguyen's reproducible summation): with ``M = 1.5 * 2**e``, ``q = (M + x) - M`` is
``x`` rounded to a multiple of ``2**(e - 52)``, ``x - q`` is exact, and the next level splits
that remainder with a smaller ``e``. The exponents come from bounds every rank agrees on (the
largest ``|x|`` over all ranks and the total row count), so every partial sum of a level is
exact, on any rank and across ranks. The statistic's value is its levels added smallest first
(:func:`collapse`), one rounding that every layout of the rows shares.

A statistic whose terms are all integers, with ``rows * max|x| < 2**53``, is summed as is (no
levels): its float64 sums are exact already (counts, integer weights and targets, which is
also what keeps single trees equal to scikit-learn's there). Otherwise it gets the fewest
levels, up to :data:`MAX_LEVELS`, whose last rounding is below the float64 precision of the
smallest non-zero term or below ``2**-RELATIVE_BITS`` of the bound on any sum (two levels up
to 2**25 rows). Whatever the levels, the sum does not depend on the order; only its error
(below float64's rounding of the bound) does on the number of levels.
"""
from __future__ import annotations

import math

import numpy as np

from .._jit import njit

MAX_LEVELS = 3
# levels stop once their rounding is below 2**-RELATIVE_BITS of the bound 2**e on any sum:
# far below float64's own rounding of such a sum (2**-53 of it), and two levels reach it up
# to 2**25 rows
RELATIVE_BITS = 80


class LevelPlan:
    """How each of ``S`` statistics is summed: ``nlev[s]`` levels (0: plainly, one slot),
    ``mags[s, l]`` the ``M`` of level ``l``, ``off`` the first slot of each statistic in the
    widened axis of ``width`` slots."""

    def __init__(self, nlev, mags):
        self.nlev = np.ascontiguousarray(nlev, np.int64)
        self.mags = np.ascontiguousarray(mags, np.float64)
        slots = np.maximum(self.nlev, 1)
        self.off = np.zeros(self.nlev.size + 1, np.int64)
        self.off[1:] = np.cumsum(slots)
        self.width = int(self.off[-1])

    @property
    def plain(self) -> bool:
        """No statistic needs levels: histograms keep their ``S`` sums."""
        return not bool(self.nlev.any())


def _bit_length_minus1(n: int) -> int:
    # ceil(log2(n)) for n >= 1
    return max(int(n) - 1, 0).bit_length()


def plan_levels(maxabs, minabs, integral, n_total: int) -> LevelPlan:
    """The plan for statistics with the given global bounds.

    Parameters
    ----------
    maxabs, minabs : float64 (S,)
        Largest and smallest non-zero ``|x|`` of any term over every rank (``minabs`` inf
        when all are zero).
    integral : bool (S,)
        Every term of the statistic is an integer.
    n_total : int
        Terms one sum can hold at most (rows over every rank).
    """
    maxabs = np.asarray(maxabs, np.float64)
    S = maxabs.size
    nlev = np.zeros(S, np.int64)
    mags = np.zeros((S, MAX_LEVELS))
    b = _bit_length_minus1(max(int(n_total), 1))
    for s in range(S):
        top = float(maxabs[s])
        if top == 0.0 or not math.isfinite(top):
            continue  # all zero (exact), or overflowing terms (summed as is)
        if bool(integral[s]) and top * max(int(n_total), 1) < 2.0 ** 53:
            continue
        e = math.frexp(top)[1] + b + 1  # 2**e >= 2 * n_total * max|x|
        if e > 1020:
            continue
        low = float(minabs[s])
        goal = math.frexp(low)[1] - 54 if math.isfinite(low) and low > 0 else -1074
        goal = max(goal, e - RELATIVE_BITS)
        for lev in range(MAX_LEVELS):
            if e < -1000:
                break
            mags[s, lev] = math.ldexp(1.5, e)
            nlev[s] = lev + 1
            if e - 53 <= goal:  # this level's rounding is below the smallest term's ulp
                break
            e = e - 53 + b + 1  # remainders are at most 2**(e - 53) each
    return LevelPlan(nlev, mags)


@njit(cache=True, nogil=True, inline="always")
def add_levels(flat, o, x, s, nlev, mags):
    """Add term ``x`` of statistic ``s`` to the slots at ``flat[o:]`` (``o`` the statistic's
    first slot)."""
    L = nlev[s]
    if L == 0:
        flat[o] += x
        return
    for lev in range(L):
        M = mags[s, lev]
        q = (M + x) - M
        flat[o + lev] += q
        x = x - q


def split_terms(x, s, plan: LevelPlan) -> np.ndarray:
    """The level parts of terms ``x`` (n,) of statistic ``s``: (n, slots of s)."""
    x = np.array(x, np.float64)
    L = int(plan.nlev[s])
    if L == 0:
        return x[:, None]
    out = np.empty((x.size, L))
    for lev in range(L):
        M = plan.mags[s, lev]
        q = (M + x) - M
        out[:, lev] = q
        x = x - q
    return out


def collapse(ext, plan: LevelPlan) -> np.ndarray:
    """(..., width) level sums -> (..., S) values, each statistic's levels added smallest
    first."""
    if plan.plain:
        return ext
    ext = np.asarray(ext, np.float64)
    out = np.empty(ext.shape[:-1] + (plan.nlev.size,))
    for s in range(plan.nlev.size):
        a, L = int(plan.off[s]), max(int(plan.nlev[s]), 1)
        v = ext[..., a + L - 1].copy()
        for lev in range(L - 2, -1, -1):
            v = ext[..., a + lev] + v
        out[..., s] = v
    return out


def _global_bounds(collective, maxabs, minabs, nonint, n):
    """Per-statistic max |x|, min non-zero |x| and any-non-integer over every rank, and the
    total row count: each rank writes its own slot of a zero vector, so the sum is exact."""
    S = maxabs.size
    world, rank = collective.world_size, collective.rank
    width = 3 * S + 1
    v = np.zeros(world * width)
    # min as -(1/min) is not exact; ship the min itself with inf as +large sentinel
    mins = np.where(np.isfinite(minabs), minabs, -1.0)
    v[rank * width: (rank + 1) * width] = np.concatenate([maxabs, mins, nonint, [n]])
    got = collective.allreduce_sum(v).reshape(world, width)
    mx = got[:, :S].max(axis=0)
    mn_rows = got[:, S:2 * S]
    mn = np.where(mn_rows > 0, mn_rows, np.inf).min(axis=0)
    return mx, mn, got[:, 2 * S:3 * S].max(axis=0) == 0, int(round(got[:, -1].sum()))


def _bounds(hi, lo):
    """Local (max |hi|, min non-zero |lo|, any non-integer lo) of one statistic's terms."""
    a = np.abs(np.asarray(hi, np.float64))
    b = np.abs(np.asarray(lo, np.float64))
    nz = b[b > 0]
    return (float(a.max()) if a.size else 0.0, float(nz.min()) if nz.size else np.inf,
            float(bool(np.any(b != np.round(b)))))


def plan_for_terms(collective, hi, lo=None, n_rows=None, nonint=None) -> LevelPlan:
    """The plan for S statistics (every rank calls it): ``hi[s]`` bounds the magnitude of
    statistic s's terms row by row (this rank's rows), ``lo[s]`` (default ``hi[s]``) holds
    its smallest non-zero terms and decides whether all are integers (or ``nonint[s]`` true:
    some term is not); ``n_rows`` (default the arrays' length) is this rank's row count."""
    lo = hi if lo is None else lo
    S = len(hi)
    mx, mn, ni = np.zeros(S), np.full(S, np.inf), np.zeros(S)
    for s in range(S):
        mx[s], mn[s], ni[s] = _bounds(hi[s], lo[s])
        if nonint is not None and nonint[s]:
            ni[s] = 1.0
    n = int(n_rows) if n_rows is not None else max((np.asarray(x).size for x in hi), default=0)
    gmx, gmn, integral, n_total = _global_bounds(collective, mx, mn, ni, n)
    return plan_levels(gmx, gmn, integral, n_total)


def stat_plan(collective, crit_classification: bool, n_classes: int, cls, y, ylny, rw,
              max_count, tcw=None) -> LevelPlan:
    """The plan for the trees' node statistics (``criteria``; ``crit_classification``: the
    per-label sums of ``criteria.per_label``, labels ``cls``): rows weigh ``rw * count``
    with ``count`` at most ``max_count`` (n,) (bootstrap counts; ones for a single tree),
    times ``tcw[t, class]`` in tree ``t`` when per-tree class weights (T, K) are given."""
    rw = np.asarray(rw, np.float64)
    wmax = rw * np.asarray(max_count, np.float64)
    ones = np.ones(rw.size)
    nonint = None
    if crit_classification and tcw is None:
        # per label (class, or absolute_error's target value): only its rows' weights
        # matter, so O(n) memory for any number of labels
        hi, lo = [ones], [ones]
        cls = np.asarray(cls, np.int64)
        order = np.argsort(cls, kind="stable")
        cuts = np.searchsorted(cls[order], np.arange(n_classes + 1))
        for c in range(n_classes):
            rows = order[cuts[c]:cuts[c + 1]]
            hi.append(wmax[rows])
            lo.append(rw[rows])
    elif crit_classification:
        hi, lo = [ones], [ones]
        tcw = np.asarray(tcw, np.float64)
        nonint = [False] + [bool(np.any(tcw[:, c] != np.round(tcw[:, c])))
                            for c in range(n_classes)]
        for c in range(n_classes):
            sel = cls == c
            col = tcw[:, c]  # the class's largest and smallest non-zero tree weight
            top = float(col.max()) if col.size else 0.0
            low = float(col[col > 0].min()) if np.any(col > 0) else 0.0
            hi.append(np.where(sel, wmax * top, 0.0))
            lo.append(np.where(sel, rw * low, 0.0))
    else:
        ay, al = np.abs(y), np.abs(ylny)
        hi = [ones, wmax, wmax * ay, (wmax * ay) * ay, wmax * al]
        lo = [ones, rw, rw * y, (rw * y) * y, rw * ylny]
    return plan_for_terms(collective, hi, lo, rw.size, nonint)


def exact_sums(collective, values) -> np.ndarray:
    """Column sums (S,) of ``values`` (n, S) over every rank, the same for any order and
    spread of the rows (every rank calls it)."""
    values = np.asarray(values, np.float64).reshape(-1, np.shape(values)[-1])
    plan = plan_for_terms(collective, [values[:, s] for s in range(values.shape[1])])
    local = np.concatenate([split_terms(values[:, s], s, plan).sum(axis=0)
                            for s in range(values.shape[1])])
    return collapse(collective.allreduce_sum(local), plan)
