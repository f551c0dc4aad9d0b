"""Kernel speed of the portable numba targets beside the host CPU's (no Spark).

    python benchmarks/portable_cache_speed.py [--rounds 3] [--targets host x86-64-v3 generic]

A wheel's cache holds entries compiled for the build machine's CPU and for portable targets
(``sparkxml_kernels._jit.PORTABLE_TARGETS``); a worker on another CPU type runs the portable
code for as long as it lives. This prints what that costs: each target runs in its own
process (``NUMBA_CPU_NAME=<target> NUMBA_CPU_FEATURES=""``; "host" sets neither) with its own
numba cache, compiles on small data first (not timed), then times, in CPU seconds of the
process (fairer than wall time on a shared machine):

- GBT: ``sparkxml_kernels.gbt.train``, 200,000 x 20 dense rows, 60 trees of depth 6, one
  thread (histograms, split search, partitions, gradients);
- FastXML: ``train_forest`` on Bibtex, 15 trees (sparse dots, logistic solves, nDCG);
- FM: ``sparkxml_kernels.fm`` MCMC fit, 20,000 x 50, rank 8, 20 iterations.

Rounds alternate the targets (host, v3, generic, host, ...), so load drifts hit all alike;
the medians and each target's ratio to the host are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("SPARKXML_DATA") or os.path.join(HERE, "..", "..", "shared", "data")
BIBTEX = os.path.join(DATA, "bibtex", "xc_split")


def _child() -> None:
    import numpy as np
    import scipy.sparse as sp

    from sparkxml_kernels.collective import LocalCollective
    from sparkxml_kernels.fastxml import train_forest
    from sparkxml_kernels.fm import train as fmt
    from sparkxml_kernels.formats import read_xc
    from sparkxml_kernels.gbt import bin_data, edges_from_sketch, sketch, train

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200_000, 20))
    y = (np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(len(X)) > 0) * 1.0
    edges = edges_from_sketch(sketch(X, None, 256), 256)
    Xb = bin_data(X, edges, 1)
    gp = dict(maxIter=60, maxDepth=6, stepSize=0.1, maxBins=256, objective="logistic",
              nthread=1)
    xc = read_xc(os.path.join(BIBTEX, "bibtex_train.txt"))[:7]
    Xi, Xf, Xv, Yi, Yl, d, n_labels = xc
    Xfm = sp.csr_matrix(rng.standard_normal((20_000, 50)))
    yfm = Xfm[:, 0].toarray().ravel() * Xfm[:, 1].toarray().ravel()
    fmp = dict(solver="mcmc", task="regression", factorSize=8, maxIter=50, regParam=0.01,
               initStd=0.1, seed=0, burnIn=10, thinning=1, stepSize=0.01,
               miniBatchFraction=1.0, tol=0.0, fitIntercept=True, fitLinear=True,
               fieldStarts=None)

    def fit_fm(n, iters):
        coll = LocalCollective()
        X = Xfm[:n]
        prep = fmt.prepare(X.indptr, X.indices, X.data, yfm[:n], None,
                           np.arange(n, dtype=np.int64), X.shape[1], coll, 0, 1)
        fmt.train_fm(prep, dict(fmp, maxIter=iters, burnIn=min(10, iters - 1)), coll)

    def gbt():
        train(Xb, y, None, edges, gp)

    def fastxml():
        train_forest(*xc, tree_ids=np.arange(15), seed=0)

    def fm():
        fit_fm(Xfm.shape[0], 20)

    # compile (or load) everything on small inputs first
    train(Xb[:2000], y[:2000], None, edges, dict(gp, maxIter=2))
    train_forest(Xi[:41], Xf[:Xi[40]], Xv[:Xi[40]], Yi[:41], Yl[:Yi[40]], d, n_labels, [0],
                 max_leaf=5)
    fit_fm(200, 2)
    out = {}
    for name, f in (("gbt", gbt), ("fastxml", fastxml), ("fm", fm)):
        c0 = time.process_time()
        f()
        out[name] = time.process_time() - c0
    print(json.dumps(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--targets", nargs="+", default=["host", "x86-64-v3", "generic"])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child()
        return 0
    import numpy as np

    caches = {t: tempfile.mkdtemp(prefix=f"sparkxml-portable-{t}-") for t in args.targets}
    times: dict = {t: [] for t in args.targets}
    print(f"load average before: {os.getloadavg()}", flush=True)
    try:
        for r in range(args.rounds + 1):  # round 0 compiles into each target's cache
            for t in args.targets:
                env = {k: v for k, v in os.environ.items()
                       if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_CACHE_DIR")}
                env["SPARKXML_NUMBA_CACHE_DIR"] = caches[t]
                if t != "host":
                    env.update(NUMBA_CPU_NAME=t, NUMBA_CPU_FEATURES="")
                out = subprocess.run([sys.executable, __file__, "--child"], env=env,
                                     capture_output=True, text=True)
                if out.returncode:
                    raise RuntimeError(out.stderr[-3000:])
                res = json.loads(out.stdout.strip().splitlines()[-1])
                if r:
                    times[t].append(res)
                print(f"round {r} {t}: " + ", ".join(f"{k} {v:.2f} s" for k, v in res.items()),
                      flush=True)
    finally:
        for d in caches.values():
            shutil.rmtree(d, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    first = times[args.targets[0]]
    base = {k: np.median([x[k] for x in first]) for k in first[0]}
    print("| target | " + " | ".join(f"{k} CPU s (x {args.targets[0]})" for k in base) + " |")
    for t in args.targets:
        med = {k: np.median([x[k] for x in times[t]]) for k in base}
        print(f"| {t} | " + " | ".join(f"{med[k]:.2f} ({med[k] / base[k]:.2f})" for k in base)
              + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
