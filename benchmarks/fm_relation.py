"""Relation blocks: FM MCMC on generated ratings with user and item blocks, kernel level.

    python benchmarks/fm.py --relation [--relation-rows 1000000] [--iters 200] [--rank 10]
                            [--relation-spark]
    python benchmarks/fm_relation.py [same options]

Data (``make``): ``--relation-rows`` ratings of ``rows / 100`` users and ``rows / 200`` items.
A user's block row: the one-hot user id and an implicit-feedback set of ~20 items (values
1/sqrt(set size), as in SVD++ and myFM's MovieLens example); an item's block row: the one-hot
item id and ~3 of 18 genres. The rating: bias + user x item and user x genre interactions +
noise. 10 % of the ratings (seed) are held out. Flat, each rating holds ~25 non-zeros.

Engines, each in its own process (peak memory = the process's peak RSS, and its growth during
the fit above the RSS before it), the same rank, sweeps and burn-in (5, myFM's default):

* ``sparkxml relation``: ``sparkxml_kernels.fm.train`` with the relation blocks (the MCMC sweep
  over per-block-row aggregates), one process, no Spark;
* ``sparkxml flat``: the same solver on the expanded rows (the flat encoding); the expansion
  is timed apart;
* ``myFM relation``: ``MyFMRegressor.fit(X, y, X_rel=[RelationBlock, RelationBlock])``;
* ``myFM flat``: ``MyFMRegressor.fit`` on the expanded rows.

Reported: fit seconds, peak RSS, test RMSE, and the largest difference between the sparkxml
relation and flat predictions on the test rows (the same chain up to the rounding of the
regrouped sums). ``--relation-spark`` adds one Spark-level pair of fits (local[2],
``FMRegressor(relationCols=...)`` beside the flat vectors) on the same data.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def make(n_rows: int, seed: int = 0):
    """(blocks (users CSR, items CSR), idx int64 (2, n), y, test mask)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n_users, n_items, n_genres = max(10, n_rows // 100), max(10, n_rows // 200), 18
    # implicit feedback sets: ~20 items per user, popularity-skewed
    pop = 1.0 / np.arange(1, n_items + 1) ** 0.8
    pop /= pop.sum()
    sizes = rng.integers(5, 36, n_users)
    rows = np.repeat(np.arange(n_users), sizes)
    cols = rng.choice(n_items, size=rows.size, p=pop)
    imp = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_users, n_items))
    imp.data[:] = 1.0  # a repeated draw counts once
    imp = sp.diags(1.0 / np.sqrt(np.maximum(imp.getnnz(axis=1), 1))) @ imp
    users = sp.hstack([sp.eye(n_users), imp]).tocsr()
    genres = (rng.random((n_items, n_genres)) < 3 / n_genres).astype(float)
    items = sp.hstack([sp.eye(n_items), sp.csr_matrix(genres)]).tocsr()
    u = rng.integers(0, n_users, n_rows)
    i = rng.choice(n_items, size=n_rows, p=pop)
    U, It, Gn = (rng.normal(0, 0.4, (n_users, 4)), rng.normal(0, 0.4, (n_items, 4)),
                 rng.normal(0, 0.4, (n_genres, 4)))
    Ug = rng.normal(0, 0.3, (n_users, 4))
    y = (3.5 + rng.normal(0, 0.3, n_users)[u] + rng.normal(0, 0.3, n_items)[i]
         + np.einsum("nk,nk->n", U[u], It[i]) + np.einsum("nk,nk->n", Ug[u], genres[i] @ Gn)
         + rng.normal(0, 0.5, n_rows))
    test = rng.random(n_rows) < 0.1
    return (users, items), np.vstack([u, i]), y, test


def _expand(blocks, idx):
    import scipy.sparse as sp

    from sparkxml_kernels.fm.relation import RelationBlock, expand_relations

    n = idx.shape[1]
    rb = [RelationBlock.from_matrix(b, name) for b, name in zip(blocks, ("user", "item"))]
    ip, ix, dv, d = expand_relations(np.zeros(n + 1, np.int64), np.zeros(0, np.int32),
                                     np.zeros(0), 0, rb, idx)
    return sp.csr_matrix((dv, ix, ip), shape=(n, d))


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run_engine(engine: str, args, out_path: str) -> dict:
    """Fit one engine in this process; write its test predictions to ``out_path``."""
    blocks, idx, y, test = make(args.relation_rows, args.seed)
    tr = ~test
    info = {"engine": engine}
    expand_s = 0.0
    if engine.endswith("flat"):
        t0 = time.perf_counter()
        X = _expand(blocks, idx)
        expand_s = time.perf_counter() - t0
        Xtr, Xte = X[tr], X[test]
    if engine.startswith("sparkxml") and not args.warm:
        # compile / load the numba kernels on a small slice first: the fit measured next
        # then holds data, not compiled code
        warm = argparse.Namespace(**dict(vars(args), relation_rows=2000, iters=3, warm=True))
        run_engine(engine, warm, out_path)
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    if engine.startswith("sparkxml"):
        from sparkxml_kernels.collective import LocalCollective
        from sparkxml_kernels.fm import train as T
        from sparkxml_kernels.fm.predictor import FMPredictor
        from sparkxml_kernels.fm.relation import RelationBlock

        params = dict(solver="mcmc", task="regression", factorSize=args.rank,
                      maxIter=args.iters, regParam=0.0, initStd=0.1, seed=args.seed,
                      burnIn=min(5, args.iters - 1), thinning=1, stepSize=0.0, miniBatchFraction=1.0, tol=0.0,
                      fitIntercept=True, fitLinear=True, fieldStarts=None)
        coll = LocalCollective()
        n_tr = int(tr.sum())
        keys = np.arange(n_tr, dtype=np.int64) * 2654435761 % 1000000007
        if engine == "sparkxml relation":
            rb = [RelationBlock.from_matrix(b, name) for b, name in zip(blocks, ("user",
                                                                                  "item"))]
            prep, rel = T.prepare(np.zeros(n_tr + 1, np.int64), np.zeros(0, np.int32),
                                  np.zeros(0), y[tr], None, keys, 0, coll,
                                  extra=idx[:, tr].T)
            arrays, _ = T.train_fm(prep, params, coll, relations=(rb, np.ascontiguousarray(
                rel.T)))
        else:
            prep = T.prepare(Xtr.indptr, Xtr.indices, Xtr.data, y[tr], None, keys,
                             Xtr.shape[1], coll)
            arrays, _ = T.train_fm(prep, params, coll)
        fit_s = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        Xq = Xte if engine.endswith("flat") else _expand(blocks, idx[:, test])
        pred = FMPredictor.from_arrays(arrays).predict_csr(Xq.indptr, Xq.indices, Xq.data)[1]
    else:
        import myfm
        import scipy.sparse as sp

        fm = myfm.MyFMRegressor(rank=args.rank, init_stdev=0.1, random_seed=args.seed)
        if engine == "myFM relation":
            rel = [myfm.RelationBlock(idx[r, tr].astype(np.int64), blocks[r]) for r in (0, 1)]
            fm.fit(sp.csr_matrix((int(tr.sum()), 0)), y[tr], X_rel=rel, n_iter=args.iters,
                   n_kept_samples=args.iters - 5)
            fit_s = time.perf_counter() - t0
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            rel_te = [myfm.RelationBlock(idx[r, test].astype(np.int64), blocks[r])
                      for r in (0, 1)]
            pred = fm.predict(sp.csr_matrix((int(test.sum()), 0)), X_rel=rel_te)
        else:
            fm.fit(Xtr, y[tr], n_iter=args.iters, n_kept_samples=args.iters - 5)
            fit_s = time.perf_counter() - t0
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            pred = fm.predict(Xte)
    np.save(out_path, np.asarray(pred, np.float64))
    info.update(fit_s=fit_s, expand_s=expand_s, peak_rss_mb=peak, fit_rss_growth_mb=peak - rss0,
                test_rmse=float(np.sqrt(np.mean((pred - y[test]) ** 2))))
    return info


ENGINES = ("sparkxml relation", "sparkxml flat", "myFM relation", "myFM flat")


def _spark_pair(args) -> list[str]:
    """One Spark-level pair of fits (relation blocks vs flat vectors), numWorkers 1."""
    sys.path.insert(0, HERE)
    from _harness import session

    from sparkxml import FMRegressor
    from sparkxml.datasets import from_csr

    blocks, idx, y, test = make(args.relation_rows, args.seed)
    spark = session(master="local[2]", app="fm-relation",
                    conf={"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4"})
    lines = []
    try:
        rows = spark.createDataFrame(
            [(int(a), int(b), float(c)) for a, b, c in zip(idx[0], idx[1], y)],
            ["userIdx", "itemIdx", "label"])
        X = _expand(blocks, idx)
        flat = from_csr(spark, X.indptr, X.indices, X.data, X.shape[1], columns={"label": y})
        common = dict(factorSize=args.rank, maxIter=args.iters, seed=args.seed, numWorkers=1)
        t0 = time.perf_counter()
        m_rel = FMRegressor(relationCols=["userIdx", "itemIdx"], relationBlocks=list(blocks),
                            **common).fit(rows)
        t_rel = time.perf_counter() - t0
        t0 = time.perf_counter()
        m_flat = FMRegressor(**common).fit(flat)
        t_flat = time.perf_counter() - t0
        p_rel = m_rel._predictor.predict_csr(X.indptr, X.indices, X.data)[1]
        p_flat = m_flat._predictor.predict_csr(X.indptr, X.indices, X.data)[1]
        lines.append(f"Spark local[2], numWorkers 1: fit relation {t_rel:.1f} s, flat "
                     f"{t_flat:.1f} s; max |prediction difference| "
                     f"{np.abs(p_rel - p_flat).max():.2e}")
    finally:
        spark.stop()
    return lines


def bench_relation(args) -> None:
    """Every engine in a child process, then the comparison table."""
    results, preds = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, engine in enumerate(ENGINES):
            out = os.path.join(tmp, f"{k}.npy")
            cmd = [sys.executable, os.path.abspath(__file__), "--engine", engine, "--out", out,
                   "--relation-rows", str(args.relation_rows), "--iters", str(args.iters),
                   "--rank", str(args.rank), "--seed", str(args.seed)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{engine}: failed\n{done.stderr[-2000:]}")
                continue
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            preds[engine] = np.load(out)
    print(f"\nRelation blocks: {args.relation_rows} generated ratings (90 % train), rank "
          f"{args.rank}, {args.iters} sweeps")
    print("| engine | fit (s) | peak RSS (MB) | RSS growth in fit (MB) | test RMSE |")
    print("|---|---|---|---|---|")
    for r in results:
        extra = f" (+ {r['expand_s']:.1f} s expansion)" if r["expand_s"] else ""
        print(f"| {r['engine']} | {r['fit_s']:.1f}{extra} | {r['peak_rss_mb']:.0f} | "
              f"{r['fit_rss_growth_mb']:.0f} | {r['test_rmse']:.4f} |")
    if "sparkxml relation" in preds and "sparkxml flat" in preds:
        diff = np.abs(preds["sparkxml relation"] - preds["sparkxml flat"]).max()
        print(f"sparkxml relation vs flat: max |test prediction difference| = {diff:.2e}")
    if args.relation_spark:
        for line in _spark_pair(args):
            print(line)


def add_arguments(ap) -> None:
    """The options this part adds to benchmarks/fm.py."""
    ap.add_argument("--relation", action="store_true",
                    help="relation blocks vs the flat encoding and myFM (kernel level)")
    ap.add_argument("--relation-rows", type=int, default=1_000_000)
    ap.add_argument("--relation-spark", action="store_true",
                    help="with --relation: one Spark-level pair of fits too")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--rank", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.warm = False
    if args.engine:
        print(json.dumps(run_engine(args.engine, args, args.out)))
    else:
        bench_relation(args)


if __name__ == "__main__":
    main()
