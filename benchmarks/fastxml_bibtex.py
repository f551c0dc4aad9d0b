"""FastXML and PfastreXML on Bibtex (XC split): sparkxml on local[2] beside napkinXC, omikuji
and, when given the path to their binaries, the authors' C++ FastXML and PfastreXML — all
measured in this one run.

    .venv/bin/python benchmarks/fastxml_bibtex.py [--cpp-bin DIR] [--repeats 3] [--only pfastrexml]
    .venv/bin/python benchmarks/fastxml_bibtex.py --cold   # cold start only (see _cold.py)

DIR holds the authors' `fastXML_train`, `fastXML_predict`, `PfastreXML_train` and
`PfastreXML_predict` executables (build them from their public source yourself; nothing of it
ships here). PfastreXML's C++ gets the inverse propensities (A=0.55, B=1.5, from the training
label counts) as a file of float32 values, the ones sparkxml computes. Times are wall-clock
seconds; fit times of sparkxml exclude the one-off numba compilation, which is reported
separately. P@k and PSP@k (propensities as above) are in %; sparkxml's rows use seed 0, and
rowOrder "input" (the file's order, as the C++ reads it) unless marked "content".
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np
from _harness import Results, load_average, session

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data", "bibtex", "xc_split")


def precision_at(pred_lists, Y, ks=(1, 3, 5), inv_prop=None):
    """P@k (or PSP@k with inverse propensities) in %, via sparkxml_kernels.metrics."""
    from sparkxml_kernels import metrics

    P = metrics.topk_matrix([list(p) for p in pred_lists], max(ks))
    if inv_prop is None:
        return {k: 100.0 * metrics.precision_at_k(P, Y[0], Y[1], k) for k in ks}
    return {k: 100.0 * metrics.psp_at_k(P, Y[0], Y[1], inv_prop, k) for k in ks}


def fmt(p):
    return "/".join(f"{p[k]:.2f}" for k in (1, 3, 5))


def run_sparkxml(train_path, test_path, Yte, repeats, configs, seeds=(None,)):
    """Fit and predict each (name, estimator class, params) config on one local[2] session,
    ``repeats`` times for each of ``seeds`` (None: the estimator's default seed). The result
    has the median fit and predict seconds over every fit, ``pred`` (the last fit's top-k
    lists) and ``preds`` (one such list per seed)."""
    from sparkxml.datasets import read_xc

    spark = session(master="local[2]", app="fastxml-bibtex", log_level=None)
    train = read_xc(spark, train_path).cache()
    test = read_xc(spark, test_path).cache()
    train.count(), test.count()
    out = {}
    for name, est, kw in configs:
        t = time.perf_counter()
        est(numTrees=2, numWorkers=2).fit(train).transform(test).collect()
        warm = time.perf_counter() - t
        fits, preds, per_seed = [], [], []
        for seed in seeds:
            seed_kw = {} if seed is None else {"seed": seed}
            for _ in range(repeats):
                t = time.perf_counter()
                model = est(**{"numWorkers": 2, **seed_kw, **kw}).fit(train)
                fits.append(time.perf_counter() - t)
                t = time.perf_counter()
                rows = model.transform(test).select("prediction").collect()
                preds.append(time.perf_counter() - t)
            per_seed.append([r[0] for r in rows])
        out[name] = dict(fit=statistics.median(fits), predict=statistics.median(preds),
                         pred=per_seed[-1], preds=per_seed,
                         note=f"first fit+predict (2 trees) incl. numba load {warm:.1f} s")
    spark.stop()
    return out


def run_napkinxc(Xtr, Ytr, Xte, Yte, seed=None):
    from napkinxc.models import PLT

    with tempfile.TemporaryDirectory() as d:
        m = PLT(d, threads=2, seed=seed)
        ylists = [Ytr[1][Ytr[0][i]:Ytr[0][i + 1]].tolist() for i in range(Xtr.shape[0])]
        t = time.perf_counter()
        m.fit(Xtr, ylists)
        fit = time.perf_counter() - t
        t = time.perf_counter()
        pred = m.predict(Xte, top_k=5)
        predict = time.perf_counter() - t
    return dict(fit=fit, predict=predict, pred=pred, note="PLT defaults, 2 threads")


def run_omikuji(train_path, Xte, Yte):
    import omikuji

    hp = omikuji.Model.default_hyper_param()
    t = time.perf_counter()
    m = omikuji.Model.train_on_data(train_path, hp, n_threads=2)
    fit = time.perf_counter() - t
    t = time.perf_counter()
    pred = []
    for i in range(Xte.shape[0]):
        row = Xte.getrow(i)
        pred.append([lab for lab, _ in m.predict(list(zip(row.indices.tolist(),
                                                           row.data.tolist())), top_k=5)])
    predict = time.perf_counter() - t
    return dict(fit=fit, predict=predict, pred=pred, note="defaults, 2 threads")


def run_cpp(bin_dir, train_path, test_path, inv_prop=None, repeats=1):
    """The authors' fastXML_train/predict, or PfastreXML_train/predict given ``inv_prop``;
    median times of ``repeats`` runs."""
    from sparkxml_kernels import formats

    with tempfile.TemporaryDirectory() as d:
        for name, path in (("trn", train_path), ("tst", test_path)):
            xi, xj, xv, yi, yj, nf, nl = formats.read_xc(path)
            formats.write_smat(os.path.join(d, f"{name}_X_Xf.txt"), xi, xj, xv, nf)
            formats.write_smat(os.path.join(d, f"{name}_X_Y.txt"), yi, yj,
                               np.ones(len(yj), np.float32), nl)
        model = os.path.join(d, "model")
        os.makedirs(model)
        train = [os.path.join(bin_dir, "fastXML_train"), f"{d}/trn_X_Xf.txt",
                 f"{d}/trn_X_Y.txt"]
        predict = os.path.join(bin_dir, "fastXML_predict")
        if inv_prop is not None:
            with open(f"{d}/inv_prop.txt", "w") as out:
                out.write("\n".join("%.9g" % v for v in inv_prop) + "\n")
            train = [os.path.join(bin_dir, "PfastreXML_train"), *train[1:], f"{d}/inv_prop.txt"]
            predict = os.path.join(bin_dir, "PfastreXML_predict")
        fits, preds = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            subprocess.run(train + [model, "-T", "2", "-q", "1"], check=True,
                           capture_output=True)
            fits.append(time.perf_counter() - t)
            t = time.perf_counter()
            subprocess.run([predict, f"{d}/tst_X_Xf.txt", f"{d}/score.txt", model, "-q", "1"],
                           check=True, capture_output=True)
            preds.append(time.perf_counter() - t)
        fit, predict_s = statistics.median(fits), statistics.median(preds)
        pred = []
        with open(f"{d}/score.txt") as f:
            next(f)
            for line in f:
                pairs = [tok.split(":") for tok in line.split()]
                pairs.sort(key=lambda p: -float(p[1]))
                pred.append([int(a) for a, _ in pairs[:5]])
    return dict(fit=fit, predict=predict_s, pred=pred, note=f"-T 2, median of {repeats}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpp-bin", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--only", choices=("fastxml", "pfastrexml"), default=None)
    ap.add_argument("--cold", action="store_true",
                    help="only the cold-start table (benchmarks/_cold.py): first FastXML fit "
                         "in a fresh environment beside a warm one, each in a new process")
    args = ap.parse_args()
    if args.cold:
        from _cold import run as run_cold

        run_cold("fastxml", os.path.abspath(args.data))
        return
    import scipy.sparse as sp

    res = Results("fastxml_bibtex")

    from sparkxml import FastXML, PfastreXML
    from sparkxml_kernels import formats
    from sparkxml_kernels.fastxml.pfastre import propensity_weights

    train_path = os.path.join(args.data, "bibtex_train.txt")
    test_path = os.path.join(args.data, "bibtex_test.txt")

    def load(path):
        xi, xj, xv, yi, yj, nf, nl = formats.read_xc(path)
        return sp.csr_matrix((xv, xj, xi), shape=(len(xi) - 1, nf)), (yi, yj), nl

    Xtr, Ytr, n_labels = load(train_path)
    Xte, Yte, _ = load(test_path)
    inv_prop = propensity_weights(Ytr[0], Ytr[1], n_labels)
    fx, pf = args.only in (None, "fastxml"), args.only in (None, "pfastrexml")
    configs = []
    if fx:
        configs += [("sparkxml FastXML (local[2], numWorkers=2)", FastXML,
                     dict(rowOrder="input")),
                    ("sparkxml FastXML (local[2], numWorkers=1, nthread=2)", FastXML,
                     dict(rowOrder="input", numWorkers=1, nthread=2))]
    if pf:
        configs += [("sparkxml PfastreXML (local[2], numWorkers=2)", PfastreXML,
                     dict(rowOrder="input")),
                    ("sparkxml PfastreXML, content order", PfastreXML, dict()),
                    ("sparkxml PfastXML (tailClassifiers=False)", PfastreXML,
                     dict(rowOrder="input", tailClassifiers=False))]
    results = run_sparkxml(train_path, test_path, Yte, args.repeats, configs)
    if fx:
        for name, fn in (("napkinXC PLT", lambda: run_napkinxc(Xtr, Ytr, Xte, Yte)),
                         ("omikuji", lambda: run_omikuji(train_path, Xte, Yte))):
            try:
                results[name] = fn()
            except ImportError as e:
                print(f"{name}: not installed ({e}); pip install -e '.[bench]'")
    if args.cpp_bin and fx:
        results["FastXML C++ (authors)"] = run_cpp(args.cpp_bin, train_path, test_path,
                                                   repeats=args.repeats)
    if args.cpp_bin and pf:
        results["PfastreXML C++ (authors)"] = run_cpp(args.cpp_bin, train_path, test_path,
                                                      inv_prop, repeats=args.repeats)
    print(f"\nBibtex XC split: {Xtr.shape[0]} train, {Xte.shape[0]} test rows; load average "
          f"{load_average()[0]:.1f} at the end\n")
    print("| system | P@1/3/5 | PSP@1/3/5 | fit s | predict s | fit ratio (ours/them) | note |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        ours = results[configs[0][0]] if ("Pfast" not in name or not pf) else \
            results["sparkxml PfastreXML (local[2], numWorkers=2)"]
        p, psp = precision_at(r["pred"], Yte), precision_at(r["pred"], Yte, inv_prop=inv_prop)
        print(f"| {name} | {fmt(p)} | {fmt(psp)} | {r['fit']:.2f} | {r['predict']:.2f} | "
              f"{ours['fit'] / r['fit']:.2f} | {r['note']} |")
        for metric, v, unit in (("fit", r["fit"], "s"), ("predict", r["predict"], "s"),
                                *((f"P@{k}", p[k], "%") for k in (1, 3, 5)),
                                *((f"PSP@{k}", psp[k], "%") for k in (1, 3, 5))):
            res.add(name, metric, v, unit, note=r["note"] if metric == "fit" else None)
    res.write()


if __name__ == "__main__":
    main()
