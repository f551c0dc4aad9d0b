"""Training the split nodes of a forest with their rows divided between tasks.

A split node (``nodes.split_node``) is solved over fixed row blocks (``blocked``). Here every
task of one collective holds the rows of a contiguous range of blocks (:func:`block_rank`),
and the node problems travel between the tasks:

- a *token* is one problem (tree, node, slot): its weights ``u`` over the node's features and
  its ``blocked`` carry. A pass of a token visits the blocks in the pass's random order
  (``blocked.pass_order``): a visit (``blocked.segment``) runs on the rank holding the next
  block and goes on while that rank holds the following ones; after the pass's last block
  ``blocked.end_pass`` decides whether it is done. The steps are those of
  ``blocked.solve_blocked`` over all the rows, so the weights are its one-process solve's
  bit for bit;
- the tokens move in lockstep rounds: in a round each rank visits up to ``per_round`` tokens
  waiting for it (oldest first; by default its share, the waiting tokens over the ranks,
  rounded up), then the visited tokens' states are summed over the ranks (each is non-zero
  on the rank that visited it only, and x + 0 == x), and every rank queues each of them at
  the rank holding its next block. Every rank simulates the same queues from the same
  states, so they agree on the schedule without further messages. With 2 ranks a pass hops
  between them 4.5 times on average, and at most ``blocked.NUM_BLOCKS`` times with any
  number;
- a problem's weights ``u`` cover all of the task's columns, and the rows are visited where
  they lie in the task's CSR (no copy a node); only the node's features, the union of those
  its rows use on every rank (one sum of 0/1 markers a wave of nodes), travel, and they are
  the node's classifier in ``nodes.node_problems``' numbering.

Nodes are taken in waves of at most ``wave_tokens`` problems (:func:`wave_plan`; a node with
more problems, a split leaf's labels, is cut into parts), so a task holds the solver state
of at most ``wave_tokens`` problems at a time: per node and row its row number (8 bytes),
per problem and row its label, ``alpha`` and ``index`` (20 bytes), and per problem the
weights over all columns; the rows, their norms and the labels' structure (the label
matrix transposed, 1 byte an entry) are the task's, shared by every problem. A node's rows,
positives and features are read where they lie in the task's matrices, never copied (at a
root, a copy would be all of them). At 250,000 rows a task and 8 problems a wave (4 root
nodes) that is about 55 MB. A visit keeps what it changed, not a copy of the weights
before it, and the exchange sums its buffer in place.
"""
from __future__ import annotations

import time
from collections import deque
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..linear._rng import stream_state
from ..memory import release_freed
from .blocked import (
    CARRY,
    DONE,
    NUM_BLOCKS,
    PASSES,
    POS,
    Shard,
    block_offsets,
    end_pass,
    new_carry,
    pass_order,
)
from .nodes import (
    feature_major_entries,
    kept_entries,
    mark_columns,
    node_rows,
    row_norms2,
    slot_matrix_t,
)


class _Rows(NamedTuple):
    """A task's rows in the kernels' dtypes (``Shard`` and ``row_norms2`` read these)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple


# problems a wave (:func:`wave_plan`): each holds per row its label, ``alpha`` and ``index``,
# and a round's exchange grows with them. The split stage of a 500k-row forest (191 nodes,
# two tasks) grew its tasks by 238-249 MiB with 8 against 380-386 MiB with 16, in 617 s
# against 580 s (one run each)
WAVE_TOKENS = 8


def block_rank(blocks, world_size: int) -> np.ndarray:
    """The rank (int64) holding each block: contiguous ranges of block ids, in rank order.
    With more ranks than blocks, the ranks from ``NUM_BLOCKS`` on hold none."""
    return np.asarray(blocks, np.int64) * min(world_size, NUM_BLOCKS) // NUM_BLOCKS


def held_blocks(rank: int, world_size: int) -> np.ndarray:
    """uint8 (NUM_BLOCKS,): which blocks ``rank`` holds (:func:`block_rank`)."""
    return (block_rank(np.arange(NUM_BLOCKS), world_size) == rank).astype(np.uint8)


def _node_shard(Yt, rows, blocks, groups):
    """This rank's ``rows`` of a node, grouped by block: (rows int64, P bool (rows, slots),
    boff, block ids)."""
    order, boff, ids = block_offsets(blocks[rows])
    rows = rows[order]
    return rows, slot_matrix_t(Yt, rows, groups), boff, ids


def train_split_nodes(X: sp.csr_matrix, Y: sp.csr_matrix, blocks: np.ndarray, nodes: list,
                      params: dict, coll, wave_tokens: int = WAVE_TOKENS, per_round: int = 0,
                      stats: dict | None = None, keep: bool = True):
    """Train ``nodes`` (every rank: the same list of (tree, node, labels under it, slot
    groups)) with this rank's rows: ``X`` (normalised, bias column included), ``Y`` and their
    ``blocks``, which must all be blocks this rank holds (:func:`block_rank`), rows in the
    global row order. Returns, on every rank, [(tree, node, feature-major classifiers)] in
    ``nodes`` order; with ``keep`` False, [] (a rank whose results nobody collects need not
    hold the trained weights). ``stats``: see :func:`split_node_waves`."""
    return [t for _, wave in split_node_waves(X, Y.T.tocsr(), blocks, nodes, params, coll,
                                              wave_tokens, per_round, stats, lambda w: keep)
            for t in wave]


def split_node_waves(X: sp.csr_matrix, Yt: sp.csr_matrix, blocks: np.ndarray, nodes: list,
                     params: dict, coll, wave_tokens: int = WAVE_TOKENS, per_round: int = 0,
                     stats: dict | None = None, keeper=None):
    """:func:`train_split_nodes` one wave at a time, given the label matrix transposed
    (``Yt``: labels x rows, its structure only is read; the rows' label lists are never
    needed, so a caller keeps ``Yt`` alone): yields (wave number, [(tree, node,
    feature-major classifiers)]) for each wave ``keeper(wave number)`` is true of (default:
    every wave); a node cut into parts comes with the wave of its last part. Every rank ends
    a wave with every problem's weights, so any rank can keep any wave: spreading the waves
    over the ranks spreads the trained classifiers' memory, and a caller sending each wave
    on as it comes holds one wave's at a time. ``stats`` (a dict) gets the waves, rounds,
    passes (summed over the problems) and seconds spent visiting blocks and exchanging
    states, complete once the generator is exhausted."""
    stats = {} if stats is None else stats
    for key in ("waves", "rounds", "passes", "visit_seconds", "exchange_seconds"):
        stats[key] = 0
    keeper = keeper or (lambda w: True)
    C, tol, it = float(params["C"]), float(params["tol"]), int(params["max_iter"])
    thr, seed = float(params["weight_threshold"]), int(params["seed"])
    # the kernels' dtypes once, shared by every problem (a csr_matrix would narrow the
    # int64 indptr back to int32, and each problem's shard would widen its own copy)
    X = _Rows(np.ascontiguousarray(X.indptr, np.int64), np.ascontiguousarray(X.indices, np.int32),
              np.ascontiguousarray(X.data, np.float64), X.shape)
    qd = row_norms2(X)
    release_freed()  # the conversions' freed copies, before the waves' state lands on top
    pending: dict = {}  # node index -> the kept entries of its slots trained so far
    for w, wave in enumerate(wave_plan(nodes, wave_tokens)):
        keep = bool(keeper(w))
        parts = _train_wave(X, qd, Yt, blocks, nodes, wave, C, tol, it, thr, seed, coll,
                            per_round, stats)
        trained = []
        for (i, _, c1), entries in zip(wave, parts):
            pending.setdefault(i, []).append(entries)
            if c1 == len(nodes[i][3]):  # the node's last slots: it is complete
                done = pending.pop(i)
                if keep:
                    trained.append((nodes[i][0], nodes[i][1], feature_major_entries(done)))
        if keep:
            yield w, trained
        # this wave's weights go before the next wave's state is built (the caller has sent
        # them on)
        parts = trained = done = entries = None


def wave_plan(nodes: list, wave_tokens: int) -> list:
    """The waves of ``nodes``' problems: per wave [(node index, first slot, end slot)], at
    most ``wave_tokens`` problems (slots) a wave, in node and slot order. A node with more
    slots than that (a split leaf's labels) is cut into parts of ``wave_tokens``: its
    problems are independent, and a wave's solver state stays bounded."""
    waves: list = []
    size = wave_tokens
    for i, node in enumerate(nodes):
        k = len(node[3])
        for c0 in range(0, max(k, 1), wave_tokens):  # a node without slots: an empty part
            c1 = min(k, c0 + wave_tokens)
            if size + c1 - c0 > wave_tokens:
                waves.append([])
                size = 0
            waves[-1].append((i, c0, c1))
            size += c1 - c0
    return waves


def _train_wave(X, qd, Yt, blocks, nodes, wave, C, tol, it, thr, seed, coll, per_round,
                stats):
    """Solve one wave's problems (``wave``: :func:`wave_plan`'s parts); returns per part the
    :func:`nodes.kept_entries` of its slots (every rank: all of them)."""
    D = X.shape[1]
    stats["waves"] += 1
    # every part's node features over all ranks, and its row count, in one sum
    marks = np.zeros((len(wave), D + 1))
    wave_rows = [node_rows(Yt, nodes[i][2]) for i, _, _ in wave]
    for q, rows in enumerate(wave_rows):
        mark_columns(X, rows, marks[q])
        marks[q, D] = len(rows)
    marks = coll.allreduce_sum(marks, consume=True)
    # (wave part, slot, shard, u over X's columns, carry, base, total rows, node columns)
    tokens = []
    node_cols = []
    held = held_blocks(coll.rank, coll.world_size)
    for q, (i, c0, c1) in enumerate(wave):
        tree, g, _, groups = nodes[i]
        cols = np.flatnonzero(marks[q, :D] > 0).astype(np.int32)
        total = int(marks[q, D])
        rows, P, boff, ids = _node_shard(Yt, wave_rows[q], blocks, groups[c0:c1])
        node_cols.append(cols)
        for c in range(c0, c1):
            carry = new_carry()
            if total == 0:
                carry[DONE] = 1.0  # no rows: the weights stay zero
            tokens.append([q, c, Shard(X, rows, P[:, c - c0], qd, boff, ids, C, held=held),
                           np.zeros(D), carry, stream_state(seed, tree, g, c), total, cols])
    # the shards hold what they need: the markers, the unordered node rows and the slot
    # matrices go before the visits' state grows
    marks = wave_rows = rows = P = None
    release_freed()
    orders: dict = {}  # token -> (pass, its block order): one draw a pass
    queues = [deque() for _ in range(coll.world_size)]
    for k, t in enumerate(tokens):
        if not t[4][DONE]:
            queues[_holder(k, t[4], t[5], orders, coll.world_size)].append(k)
    while any(queues):
        # a rank visits at most its share of the waiting tokens: a visited token moves to
        # another rank, so a rank visiting more than its share would hand the surplus on
        # and the ranks would swap loads round after round
        cap = per_round or -(-sum(len(q) for q in queues) // coll.world_size)
        moving = [[queues[r].popleft() for _ in range(min(cap, len(queues[r])))]
                  for r in range(coll.world_size)]
        t0 = time.perf_counter()
        changed = {}
        for k in moving[coll.rank]:
            shard, u, carry, base = tokens[k][2:6]
            before = u[tokens[k][7]] if coll.world_size > 1 else None
            shard.visit(u, base, carry)
            if before is not None:  # what the visit changed, not the whole before-copy
                changed[k] = _changes(u, tokens[k][7], before)
                del before
        t1 = time.perf_counter()
        _exchange(tokens, moving, changed, coll)
        stats["visit_seconds"] += t1 - t0
        stats["exchange_seconds"] += time.perf_counter() - t1
        stats["rounds"] += 1
        for ks in moving:
            for k in ks:
                carry = tokens[k][4]
                if carry[POS] < NUM_BLOCKS or not end_pass(carry, tokens[k][6], tol, it):
                    queues[_holder(k, carry, tokens[k][5], orders, coll.world_size)].append(k)
    stats["passes"] += int(sum(t[4][PASSES] for t in tokens))
    # the parts' weights in their node's own column numbering, as nodes.train_node gives
    # them, thresholded
    return [kept_entries([t[3][node_cols[q]] for t in tokens if t[0] == q], node_cols[q], thr,
                         c0) for q, (_, c0, _) in enumerate(wave)]


def _holder(k: int, carry: np.ndarray, base: np.ndarray, orders: dict, world_size: int) -> int:
    """The rank holding the block problem ``k`` visits next (``orders`` caches its pass's
    block order)."""
    pass_no = int(carry[PASSES])
    got = orders.get(k)
    if got is None or got[0] != pass_no:
        got = orders[k] = (pass_no, block_rank(pass_order(base, pass_no), world_size))
    return int(got[1][int(carry[POS])])


def _changes(u: np.ndarray, cols: np.ndarray, before: np.ndarray):
    """(positions among ``cols``, new values) of the weights ``u[cols]`` that differ from
    ``before``."""
    now = u[cols]
    nz = np.flatnonzero(now != before)
    return nz, now[nz]


def _exchange(tokens, moving, changed, coll):
    """Every rank gets the states of the tokens visited this round: per token the weights
    its visit changed (their positions among the node's columns and their new values; a
    visit of a few blocks changes a fraction of them, and a label's problem in a leaf hardly
    any) and its carry. Two sums: the sizes, then the states, each token's slice non-zero on
    its visitor only (x + 0 == x), so every rank ends with the same weights bit for bit.
    ``changed``: per token this rank visited, (positions, new values) of the node-column
    weights its visit changed."""
    if coll.world_size == 1:
        return
    ks = [k for r in moving for k in r]
    if not ks:
        return
    sizes = np.zeros(len(ks))
    for i, k in enumerate(ks):
        if k in changed:
            sizes[i] = len(changed[k][0])
    sizes = coll.allreduce_sum(sizes).astype(np.int64)
    lens = 2 * sizes + CARRY
    buf = np.zeros(int(lens.sum()))
    pos = 0
    for i, k in enumerate(ks):
        m = sizes[i]
        if k in changed:
            nz, vals = changed[k]
            buf[pos:pos + m] = nz
            buf[pos + m:pos + 2 * m] = vals
            buf[pos + 2 * m:pos + lens[i]] = tokens[k][4]
        pos += lens[i]
    buf = coll.allreduce_sum(buf, consume=True)
    pos = 0
    for i, k in enumerate(ks):
        m = sizes[i]
        if k not in changed:
            nz = buf[pos:pos + m].astype(np.int64)
            tokens[k][3][tokens[k][7][nz]] = buf[pos + m:pos + 2 * m]
            tokens[k][4][:] = buf[pos + 2 * m:pos + lens[i]]
        pos += lens[i]
