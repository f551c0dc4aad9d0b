"""FastXML on Bibtex (XC split): sparkxml on local[2] beside napkinXC, omikuji and, when given
the path to its binaries, the authors' C++ FastXML — all measured in this one run.

    .venv/bin/python benchmarks/fastxml_bibtex.py [--cpp-bin DIR] [--repeats 3]

DIR holds the authors' `fastXML_train` and `fastXML_predict` executables (build them from
their public source yourself; nothing of it ships here). Times are wall-clock seconds; fit
times of sparkxml exclude the one-off numba compilation, which is reported separately.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data", "bibtex", "xc_split")


def precision_at(pred_lists, Y, ks=(1, 3, 5)):
    yi, yj = Y
    out = {}
    for k in ks:
        hits = 0
        for i, p in enumerate(pred_lists):
            truth = set(yj[yi[i]:yi[i + 1]].tolist())
            hits += sum(1 for lab in list(p)[:k] if lab in truth)
        out[k] = 100.0 * hits / (k * len(pred_lists))
    return out


def fmt(p):
    return "/".join(f"{p[k]:.2f}" for k in (1, 3, 5))


def run_sparkxml(train_path, test_path, Yte, repeats):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from sparkxml import FastXML
    from sparkxml.datasets import read_xc
    from sparkxml.session import get_session

    spark = get_session(master="local[2]")
    train = read_xc(spark, train_path).cache()
    test = read_xc(spark, test_path).cache()
    train.count(), test.count()
    t = time.perf_counter()
    FastXML(numTrees=2, numWorkers=2).fit(train).transform(test).collect()
    warm = time.perf_counter() - t
    fits, preds = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        model = FastXML(numWorkers=2).fit(train)
        fits.append(time.perf_counter() - t)
        t = time.perf_counter()
        rows = model.transform(test).select("prediction").collect()
        preds.append(time.perf_counter() - t)
    p = precision_at([r[0] for r in rows], Yte)
    spark.stop()
    return dict(fit=statistics.median(fits), predict=statistics.median(preds), p=p,
                note=f"first fit+predict incl. numba compile {warm:.1f} s")


def run_napkinxc(Xtr, Ytr, Xte, Yte):
    from napkinxc.models import PLT

    with tempfile.TemporaryDirectory() as d:
        m = PLT(d, threads=2)
        ylists = [Ytr[1][Ytr[0][i]:Ytr[0][i + 1]].tolist() for i in range(Xtr.shape[0])]
        t = time.perf_counter()
        m.fit(Xtr, ylists)
        fit = time.perf_counter() - t
        t = time.perf_counter()
        pred = m.predict(Xte, top_k=5)
        predict = time.perf_counter() - t
    return dict(fit=fit, predict=predict, p=precision_at(pred, Yte), note="PLT defaults, 2 threads")


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
    return dict(fit=fit, predict=predict, p=precision_at(pred, Yte), note="defaults, 2 threads")


def run_cpp(bin_dir, train_path, test_path, Yte):
    from sparkxml_kernels import formats

    with tempfile.TemporaryDirectory() as d:
        for name, path in (("trn", train_path), ("tst", test_path)):
            xi, xj, xv, yi, yj, nf, nl = formats.read_xc(path)
            formats.write_smat(os.path.join(d, f"{name}_X_Xf.txt"), xi, xj, xv, nf)
            formats.write_smat(os.path.join(d, f"{name}_X_Y.txt"), yi, yj,
                               np.ones(len(yj), np.float32), nl)
        model = os.path.join(d, "model")
        os.makedirs(model)
        t = time.perf_counter()
        subprocess.run([os.path.join(bin_dir, "fastXML_train"), f"{d}/trn_X_Xf.txt",
                        f"{d}/trn_X_Y.txt", model, "-T", "2", "-q", "1"], check=True,
                       capture_output=True)
        fit = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run([os.path.join(bin_dir, "fastXML_predict"), f"{d}/tst_X_Xf.txt",
                        f"{d}/score.txt", model, "-q", "1"], check=True, capture_output=True)
        predict = time.perf_counter() - t
        pred = []
        with open(f"{d}/score.txt") as f:
            next(f)
            for line in f:
                pairs = [tok.split(":") for tok in line.split()]
                pairs.sort(key=lambda p: -float(p[1]))
                pred.append([int(a) for a, _ in pairs[:5]])
    return dict(fit=fit, predict=predict, p=precision_at(pred, Yte), note="-T 2")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpp-bin", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default=DATA)
    args = ap.parse_args()
    import scipy.sparse as sp

    from sparkxml_kernels import formats

    train_path = os.path.join(args.data, "bibtex_train.txt")
    test_path = os.path.join(args.data, "bibtex_test.txt")

    def load(path):
        xi, xj, xv, yi, yj, nf, nl = formats.read_xc(path)
        return sp.csr_matrix((xv, xj, xi), shape=(len(xi) - 1, nf)), (yi, yj)

    Xtr, Ytr = load(train_path)
    Xte, Yte = load(test_path)
    results = {"sparkxml FastXML (local[2], numWorkers=2)":
               run_sparkxml(train_path, test_path, Yte, args.repeats)}
    for name, fn in (("napkinXC PLT", lambda: run_napkinxc(Xtr, Ytr, Xte, Yte)),
                     ("omikuji", lambda: run_omikuji(train_path, Xte, Yte))):
        try:
            results[name] = fn()
        except ImportError as e:
            print(f"{name}: not installed ({e}); pip install -e '.[bench]'")
    if args.cpp_bin:
        results["FastXML C++ (authors)"] = run_cpp(args.cpp_bin, train_path, test_path, Yte)
    ours = results["sparkxml FastXML (local[2], numWorkers=2)"]
    print(f"\nBibtex XC split: {Xtr.shape[0]} train, {Xte.shape[0]} test rows\n")
    print(f"| system | P@1/3/5 | fit s | predict s | fit ratio (ours/them) | note |")
    print(f"|---|---|---|---|---|---|")
    for name, r in results.items():
        ratio = ours["fit"] / r["fit"]
        print(f"| {name} | {fmt(r['p'])} | {r['fit']:.2f} | {r['predict']:.2f} | "
              f"{ratio:.2f} | {r['note']} |")


if __name__ == "__main__":
    main()
