"""Parabel and Bonsai on Bibtex (XC split): sparkxml on local[2] beside omikuji and napkinXC
(and sparkxml's FastXML, for the "which to pick" table), all measured in this one run.

    .venv/bin/python benchmarks/labeltree.py [--repeats 1] [--seeds 5] [--no-fastxml]

Every system trains ``--seeds`` times: sparkxml and napkinXC with seeds 0, 1, ..., omikuji
(which takes no seed) as many times. The P@k and PSP@k are the means over those runs, and the
note gives P@1's range: one run's P@1 moves by up to half a point with the seed (the trees'
clustering starts from random labels), more than the differences between the systems.
Times are wall-clock seconds, the median of every fit (``--repeats`` a seed); sparkxml's fit
times exclude the one-off numba load of the first fit, reported in the note. "kernel" rows train the same
forest in this process with ``sparkxml_kernels.labeltree`` (one core, no Spark), to show what
the Spark job adds. P@k and PSP@k (inverse propensities A=0.55, B=1.5) are in %. omikuji and
napkinXC run with their defaults on 2 threads (``pip install -e '.[bench]'``).
"""
import argparse
import os
import statistics
import time

from _harness import Results, load_average
from fastxml_bibtex import DATA, fmt, precision_at, run_napkinxc, run_omikuji, run_sparkxml


def run_kernel(train, Xte, repeats, seeds, **params):
    """Train 3 trees in-process and predict with ``LabelTreePredictor``, ``repeats`` times
    for each seed."""
    from sparkxml_kernels.labeltree.forest import train_forest
    from sparkxml_kernels.labeltree.predictor import LabelTreePredictor

    xi, xj, xv, yi, yj, nf, nl = train
    fits, preds, per_seed = [], [], []
    for seed in seeds:
        for _ in range(repeats):
            t = time.perf_counter()
            f = train_forest(xi, xj, xv, yi, yj, nf, nl, range(3), seed=seed, **params)
            fits.append(time.perf_counter() - t)
            p = LabelTreePredictor(f, nf, nl, 1.0, "squared_hinge", 10)
            t = time.perf_counter()
            labels, _ = p.predict_topk(Xte, 5)
            preds.append(time.perf_counter() - t)
        per_seed.append([list(r) for r in labels])
    return dict(fit=statistics.median(fits), predict=statistics.median(preds),
                pred=per_seed[-1], preds=per_seed, note="in-process kernel, 1 core, 3 trees")


def runs(fn, n):
    """``fn(i)`` for i < n, as one result: median times, every run's predictions."""
    out = [fn(i) for i in range(n)]
    return dict(fit=statistics.median(r["fit"] for r in out),
                predict=statistics.median(r["predict"] for r in out),
                pred=out[-1]["pred"], preds=[r["pred"] for r in out], note=out[0]["note"])


def mean_precision(preds, Y, inv_prop=None):
    """P@k (PSP@k) averaged over runs, and P@1's (PSP@1's) range."""
    each = [precision_at(p, Y, inv_prop=inv_prop) for p in preds]
    mean = {k: statistics.fmean(e[k] for e in each) for k in (1, 3, 5)}
    return mean, (min(e[1] for e in each), max(e[1] for e in each))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--no-fastxml", action="store_true")
    args = ap.parse_args()
    import scipy.sparse as sp

    from sparkxml import Bonsai, FastXML, Parabel
    from sparkxml_kernels import formats
    from sparkxml_kernels.fastxml.pfastre import propensity_weights

    res = Results("labeltree")
    train_path = os.path.join(args.data, "bibtex_train.txt")
    test_path = os.path.join(args.data, "bibtex_test.txt")
    train = formats.read_xc(train_path)
    te = formats.read_xc(test_path)
    Xtr = sp.csr_matrix((train[2], train[1], train[0]), shape=(len(train[0]) - 1, train[5]))
    Xte = sp.csr_matrix((te[2], te[1], te[0]), shape=(len(te[0]) - 1, te[5]))
    Ytr, Yte = (train[3], train[4]), (te[3], te[4])
    inv_prop = propensity_weights(Ytr[0], Ytr[1], train[6])
    configs = [("sparkxml Parabel (defaults, numWorkers=2)", Parabel, {}),
               ("sparkxml Bonsai (defaults, numWorkers=2)", Bonsai, {})]
    if not args.no_fastxml:
        configs.append(("sparkxml FastXML (defaults, numWorkers=2)", FastXML, {}))
    seeds = range(args.seeds)
    results = run_sparkxml(train_path, test_path, Yte, args.repeats, configs, seeds=seeds)
    results["sparkxml_kernels Parabel (in-process)"] = run_kernel(train, Xte, args.repeats,
                                                                  seeds)
    for name, fn in (("omikuji", lambda i: run_omikuji(train_path, Xte, Yte)),
                     ("napkinXC PLT", lambda i: run_napkinxc(Xtr, Ytr, Xte, Yte, seed=i))):
        try:
            results[name] = runs(fn, args.seeds * args.repeats)
        except ImportError as e:
            print(f"{name}: not installed ({e}); pip install -e '.[bench]'")
    load = load_average()[0]
    print(f"\nBibtex XC split: {Xtr.shape[0]} train, {Xte.shape[0]} test rows; load average "
          f"{load:.1f} at the end (2 cores); P@k and PSP@k: means of {args.seeds} runs\n")
    print("| system | P@1/3/5 | PSP@1/3/5 | P@1 range | fit s | predict s | note |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        p, (lo, hi) = mean_precision(r["preds"], Yte)
        psp, _ = mean_precision(r["preds"], Yte, inv_prop)
        r["note"] += f"; P@k means of {len(r['preds'])} runs, P@1 {lo:.2f}-{hi:.2f}"
        print(f"| {name} | {fmt(p)} | {fmt(psp)} | {lo:.2f}-{hi:.2f} | {r['fit']:.2f} | "
              f"{r['predict']:.2f} | {r['note']} |")
        for metric, v, unit in (("fit", r["fit"], "s"), ("predict", r["predict"], "s"),
                                *((f"P@{k}", p[k], "%") for k in (1, 3, 5)),
                                *((f"PSP@{k}", psp[k], "%") for k in (1, 3, 5))):
            res.add(name, metric, v, unit, note=r["note"] if metric == "fit" else None)
    res.write()


if __name__ == "__main__":
    main()
