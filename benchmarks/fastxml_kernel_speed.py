"""FastXML kernel on Bibtex: accuracy, training and prediction speed, compile time (no Spark).

Usage::

    python benchmarks/fastxml_kernel_speed.py [--data DIR] [--trees 50] [--repeat 3] [--cold]

Prints P@1/3/5 on the test split, the time to train all trees in this one process (one core;
wall and CPU seconds, median over --repeat runs), the first-call time of the kernels (numba
compile, or cache load when the on-disk cache is warm; --cold compiles into a fresh temporary
cache to measure a worker's first ever call), and the time to predict the test split.

Reference: the authors' C++ grows the same 50 trees (P@1/3/5 64.41/39.66/29.15); on the
machine where this printed 17-18 s, ``fastXML_train -T 1`` took 20.5 s wall.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                            "data", "bibtex", "xc_split")


def precision_at(labels, Yi, Yl, k):
    hits = 0
    for r in range(labels.shape[0]):
        truth = set(Yl[Yi[r]:Yi[r + 1]].tolist())
        hits += sum(1 for lab in labels[r, :k] if lab in truth)
    return 100.0 * hits / (k * labels.shape[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="compile into a fresh numba cache")
    args = ap.parse_args(argv)
    if args.cold:
        # must be set before numba is imported
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="sparkxml-numba-")

    import numpy as np
    from _harness import Results

    res = Results("fastxml_kernel_speed")
    t0 = time.perf_counter()
    from sparkxml_kernels.fastxml import FastXMLPredictor, train_forest
    t_import = time.perf_counter() - t0
    from sparkxml_kernels.formats import read_xc

    train = read_xc(os.path.join(args.data, "bibtex_train.txt"))[:7]
    test = read_xc(os.path.join(args.data, "bibtex_test.txt"))[:7]
    Xi, Xf, Xv, Yi, Yl, d, n_labels = train

    # first calls on a few rows: compile (or cache load) of the training and predict kernels
    t0 = time.perf_counter()
    small = train_forest(Xi[:41], Xf[:Xi[40]], Xv[:Xi[40]], Yi[:41], Yl[:Yi[40]], d, n_labels,
                         [0], max_leaf=5)
    t_first_train = time.perf_counter() - t0
    t0 = time.perf_counter()
    FastXMLPredictor(small, d, n_labels, 1.0).predict(Xi[:3], Xf[:Xi[2]], Xv[:Xi[2]], 5)
    t_first_predict = time.perf_counter() - t0

    walls, cpus = [], []
    for _ in range(args.repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        forest = train_forest(*train, tree_ids=np.arange(args.trees), seed=0)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)

    pred = FastXMLPredictor(forest, d, n_labels, 1.0)
    times = []
    for _ in range(max(args.repeat, 5)):
        t0 = time.perf_counter()
        labels, _ = pred.predict(test[0], test[1], test[2], 5)
        times.append(time.perf_counter() - t0)

    n_nodes = int(forest["tree_offsets"][-1])
    print(f"data: {Xi.size - 1} train / {test[0].size - 1} test points, D={d}, L={n_labels}; "
          f"{args.trees} trees, {n_nodes / args.trees:.0f} nodes a tree")
    case = f"FastXML kernel, {args.trees} trees, one process"
    for k in (1, 3, 5):
        p_k = precision_at(labels, test[3], test[4], k)
        print(f"P@{k}: {p_k:.2f}")
        res.add(case, f"P@{k}", p_k, "%")
    print(f"train {args.trees} trees, one process: wall {np.median(walls):.2f} s, "
          f"CPU {np.median(cpus):.2f} s (median of {args.repeat}; all wall: "
          f"{', '.join(f'{w:.2f}' for w in walls)})")
    print(f"first call ({'cold compile' if args.cold else 'compile or cache load'}): "
          f"train {t_first_train:.2f} s, predict {t_first_predict:.2f} s; import {t_import:.2f} s")
    print(f"predict {test[0].size - 1} points, top 5: {np.median(times) * 1000:.0f} ms "
          f"(median of {len(times)})")
    res.add(case, "train wall", np.median(walls), "s", note=f"median of {args.repeat}")
    res.add(case, "train CPU", np.median(cpus), "s", note=f"median of {args.repeat}")
    res.add(case, "predict top 5", np.median(times) * 1000, "ms",
            note=f"{test[0].size - 1} points, median of {len(times)}")
    first = "cold compile" if args.cold else "compile or cache load"
    res.add(case, f"first call train ({first})", t_first_train, "s")
    res.add(case, f"first call predict ({first})", t_first_predict, "s")
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
