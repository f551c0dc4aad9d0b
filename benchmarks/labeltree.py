"""Parabel and Bonsai on Bibtex (XC split): sparkxml on local[2] beside omikuji and napkinXC
(and sparkxml's FastXML, for the "which to pick" table), all measured in this one run.

    .venv/bin/python benchmarks/labeltree.py [--repeats 1] [--no-fastxml]

Times are wall-clock seconds (median of ``--repeats``); sparkxml's fit times exclude the
one-off numba load of the first fit, reported in the note. "kernel" rows train the same
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


def run_kernel(train, Xte, repeats, **params):
    """Train 3 trees in-process and predict with ``LabelTreePredictor``."""
    from sparkxml_kernels.labeltree.forest import train_forest
    from sparkxml_kernels.labeltree.predictor import LabelTreePredictor

    xi, xj, xv, yi, yj, nf, nl = train
    fits, preds = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        f = train_forest(xi, xj, xv, yi, yj, nf, nl, range(3), **params)
        fits.append(time.perf_counter() - t)
        p = LabelTreePredictor(f, nf, nl, 1.0, "squared_hinge", 10)
        t = time.perf_counter()
        labels, _ = p.predict_topk(Xte, 5)
        preds.append(time.perf_counter() - t)
    return dict(fit=statistics.median(fits), predict=statistics.median(preds), pred=labels,
                note="in-process kernel, 1 core, 3 trees")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=1)
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
    results = run_sparkxml(train_path, test_path, Yte, args.repeats, configs)
    results["sparkxml_kernels Parabel (in-process)"] = run_kernel(train, Xte, args.repeats)
    for name, fn in (("omikuji", lambda: run_omikuji(train_path, Xte, Yte)),
                     ("napkinXC PLT", lambda: run_napkinxc(Xtr, Ytr, Xte, Yte))):
        try:
            results[name] = fn()
        except ImportError as e:
            print(f"{name}: not installed ({e}); pip install -e '.[bench]'")
    load = load_average()[0]
    print(f"\nBibtex XC split: {Xtr.shape[0]} train, {Xte.shape[0]} test rows; load average "
          f"{load:.1f} at the end (2 cores)\n")
    print("| system | P@1/3/5 | PSP@1/3/5 | fit s | predict s | note |")
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        p, psp = precision_at(r["pred"], Yte), precision_at(r["pred"], Yte, inv_prop=inv_prop)
        print(f"| {name} | {fmt(p)} | {fmt(psp)} | {r['fit']:.2f} | {r['predict']:.2f} | "
              f"{r['note']} |")
        for metric, v, unit in (("fit", r["fit"], "s"), ("predict", r["predict"], "s"),
                                *((f"P@{k}", p[k], "%") for k in (1, 3, 5)),
                                *((f"PSP@{k}", psp[k], "%") for k in (1, 3, 5))):
            res.add(name, metric, v, unit, note=r["note"] if metric == "fit" else None)
    res.write()


if __name__ == "__main__":
    main()
