"""Training kernels alone (no Spark), one source tree beside another, in alternating processes.

    python benchmarks/kernels_ab.py --tree OLD=DIR --tree NEW=DIR [--rounds 3]
                                    [--only fastxml forest dcd]

DIR is a source tree (a ``git archive`` of a commit, say) whose ``jvm-free-udfs`` holds the
kernels. Each round runs every tree's workloads in a new process, the trees in turn; a
workload times ``--repeat`` calls after a warm-up call (numba compile or cache load) and keeps
the best, and the best over the rounds is reported. Each workload also prints a digest of the
model it trained: the trees must agree (the same model bit for bit).

Workloads, one core unless said:

* ``fastxml``: FastXML's ``train_forest`` on Bibtex's training split, 10 trees, seed 0.
* ``forest``: ``grow_forest`` on pendigits (exact bins), 100 trees, 4 features a split,
  gini, on one thread and on two (``n_threads``).
* ``dcd``: LinearSVC's dual coordinate descent on one block of ``linear_svm.py``'s scale
  problem (the 250,000 even rows of 500,000 x 100,000, hinge, C = 0.1), 40 passes, Shark's
  schedule and the permutation schedule.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")
WORKLOADS = ("fastxml", "forest", "dcd")


def _digest(arrays) -> str:
    import numpy as np

    h = hashlib.sha1()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:12]


def _best(fn, repeat):
    fn()  # warm-up: compile or cache load
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _fastxml(repeat):
    import numpy as np

    from sparkxml_kernels.fastxml import train_forest
    from sparkxml_kernels.formats import read_xc

    train = read_xc(os.path.join(DATA, "bibtex", "xc_split", "bibtex_train.txt"))[:7]
    sec, f = _best(lambda: train_forest(*train, tree_ids=np.arange(10), seed=0), repeat)
    return [("fastxml, Bibtex, 10 trees", sec, _digest(f[k] for k in sorted(f)))]


def _forest(repeat):
    import numpy as np
    from sklearn.datasets import load_svmlight_file

    from sparkxml_kernels.collective import LocalCollective
    from sparkxml_kernels.forest import bins, forest
    from sparkxml_kernels.forest.tree import SplitParams

    X, y = load_svmlight_file(os.path.join(DATA, "pendigits", "pendigits"), n_features=16)
    X, y = X.toarray(), (y - 1).astype(np.int64)
    edges, vals = bins.exact_edges(X, 256)
    Xb = bins.tree_bins(X, edges, vals)
    keys = (np.arange(len(y), dtype=np.int64) * 2654435761) ^ 0x5DEECE66D
    params = SplitParams(0, n_classes=10, max_features=4, max_depth=64)
    yy = y.astype(np.float64)
    out = []
    for threads in (1, 2):
        sec, (f, _) = _best(lambda t=threads: forest.grow_forest(
            Xb, y.astype(np.int32), yy, yy * 0, np.ones(len(y)), keys, params, 100, 0, True,
            1.0, LocalCollective(), vals, edges, n_threads=t), repeat)
        out.append((f"forest, pendigits, 100 trees, {threads} thread{'s' * (threads > 1)}",
                    sec, _digest(f[k] for k in sorted(f))))
    return out


def _dcd(repeat):

    sys.path.insert(0, HERE)
    from linear_svm import solver, synthetic

    X, y = synthetic(500_000)
    X, y = X[::2], y[::2]  # block 0 of 2
    out = []
    for sched in ("shark", "permutation"):
        sec, r = _best(lambda s=sched: solver.fit_local(
            X.indptr, X.indices, X.data, y, X.shape[1], C=0.1, schedule=s, tol=1e-12,
            max_iter=1, local_passes=40), repeat)
        out.append((f"dcd, 250k x 100k block, 40 passes, {sched}", sec,
                    _digest([r.W])))
    return out


def child(only, repeat):
    runs = {"fastxml": _fastxml, "forest": _forest, "dcd": _dcd}
    for name in only:
        for case, sec, digest in runs[name](repeat):
            print("RESULT " + json.dumps({"case": case, "seconds": sec, "digest": digest}),
                  flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="LABEL=DIR, twice or more")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", nargs="*", choices=WORKLOADS, default=list(WORKLOADS))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.only, args.repeat)
        return 0
    from _harness import Results, source_trees, tree_env

    trees = source_trees(ap, args.tree)
    res = Results("kernels_ab")
    seen: dict = {}
    for _ in range(args.rounds):
        for label, path in trees:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                                  "--repeat", str(args.repeat), "--only", *args.only],
                                 env=tree_env(path), capture_output=True, text=True)
            if out.returncode:
                sys.exit(f"{label} ({path}) failed:\n{out.stderr[-3000:]}")
            for line in out.stdout.splitlines():
                if line.startswith("RESULT "):
                    r = json.loads(line[7:])
                    seen.setdefault((r["case"], label), []).append(r)
    cases = list(dict.fromkeys(c for c, _ in seen))
    print("| workload | " + " | ".join(f"{lb} best s (rounds)" for lb, _ in trees)
          + f" | {trees[-1][0]} / {trees[0][0]} | same model |")
    print("|---" * (len(trees) + 3) + "|")
    for case in cases:
        best = {}
        cells = []
        for label, _ in trees:
            runs = seen[(case, label)]
            best[label] = min(r["seconds"] for r in runs)
            each = ", ".join(f"{r['seconds']:.3f}" for r in runs)
            cells.append(f"{best[label]:.3f} ({each})")
            res.add(case, f"{label} best", best[label], "s",
                    note=f"best of {args.repeat} calls in each of {len(runs)} rounds")
        digests = {r["digest"] for label, _ in trees for r in seen[(case, label)]}
        ratio = best[trees[-1][0]] / best[trees[0][0]]
        res.add(case, f"{trees[-1][0]} / {trees[0][0]}", ratio, "x")
        print(f"| {case} | " + " | ".join(cells) + f" | {ratio:.2f} | "
              f"{'yes' if len(digests) == 1 else 'NO'} |")
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
