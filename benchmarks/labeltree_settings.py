"""Parabel's node-classifier settings on Bibtex (XC split), over several seeds, beside repeated
runs of omikuji's and napkinXC's defaults: accuracy only (P@1/3/5 in %, mean and range).

    .venv/bin/python benchmarks/labeltree_settings.py [--seeds 4] [--anchor-runs 3]
                                                      [--only NAME ...] [--holdout 0.2]
                                                      [--arff DIR/NAME]
                                                      [--generated N D L]

Every sparkxml setting trains 3 trees (unless its name says otherwise) in this process with
``sparkxml_kernels.labeltree`` (one core, no Spark; the model Parabel's Spark fit trains with
the same params and seed) and predicts with ``LabelTreePredictor``. omikuji and napkinXC run
their defaults unseeded on 2 threads (``pip install -e '.[bench]'``): their spread over runs
is the random tree building, as the seeds' spread is for sparkxml. ``--holdout`` scores the
sparkxml settings on a held-out part of the training split instead, to compare settings
without reading the test split. ``--arff DIR/NAME`` reads a Mulan split instead
(``NAME-train.arff``, ``NAME-test.arff``, ``NAME.xml``, e.g. ``../shared/data/enron/enron`` or
``../shared/data/bibtex/mulan_split/bibtex``); omikuji then reads the training rows from a
temporary XC file. ``--generated N D L`` uses Delicious-shaped generated data instead
(``fastxml_distributed.delicious_like``: N training rows and N/10 test rows, D features, L
labels).
"""
import argparse
import os
import re
import statistics
import tempfile

from fastxml_bibtex import DATA, precision_at, run_napkinxc, run_omikuji

# (name, train_forest keyword arguments (``trees``: how many, 3 when absent), beam width)
SETTINGS = [
    ("squared_hinge C=1 (Parabel's)", dict(loss="squared_hinge", C=1.0), 10),
    ("logistic C=1", dict(loss="logistic", C=1.0), 10),
    ("squared_hinge C=10", dict(loss="squared_hinge", C=10.0), 10),
    ("logistic C=10 (napkinXC's)", dict(loss="logistic", C=10.0), 10),
    ("logistic C=10 maxIter=100 (napkinXC's)", dict(loss="logistic", C=10.0, max_iter=100), 10),
    ("squared_hinge C=1 beam 1000", dict(loss="squared_hinge", C=1.0), 1000),
    ("logistic C=10, 1 tree (napkinXC's model)", dict(loss="logistic", C=10.0, trees=1), 10),
    # around the two libraries' defaults, to see the trend (measured on the test split, so
    # not a way to choose C)
    ("logistic C=3", dict(loss="logistic", C=3.0), 10),
    ("logistic C=5", dict(loss="logistic", C=5.0), 10),
    ("logistic C=20", dict(loss="logistic", C=20.0), 10),
    ("squared_hinge C=0.5", dict(loss="squared_hinge", C=0.5), 10),
    # Bonsai's trees (16-way unbalanced k-means, depth <= 3) with the same node classifiers
    ("Bonsai squared_hinge C=1", dict(loss="squared_hinge", C=1.0, branch=16, balanced=False,
                                      max_depth=3), 10),
    ("Bonsai squared_hinge C=0.5", dict(loss="squared_hinge", C=0.5, branch=16, balanced=False,
                                        max_depth=3), 10),
]


def summary(runs):
    """'mean (min-max)' of P@1, P@3 and P@5 over runs."""
    out = []
    for k in (1, 3, 5):
        v = [r[k] for r in runs]
        out.append(f"{statistics.mean(v):.2f} ({min(v):.2f}-{max(v):.2f})")
    return " / ".join(out)


def wanted(name, only):
    """Whether ``--only`` selects ``name``: one of its strings occurs in it, not followed by a
    digit (so "C=1" does not select "C=10")."""
    return not only or any(re.search(re.escape(s) + "(?![0-9])", name) for s in only)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--anchor-runs", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="substrings of the setting names to run")
    ap.add_argument("--holdout", type=float, default=0.0,
                    help="score on this fraction of the training split (a random draw, seed "
                         "0) after training on the rest, instead of on the test split; the "
                         "anchors are not run")
    ap.add_argument("--arff", help="DIR/NAME of a Mulan split (NAME-train.arff, "
                                   "NAME-test.arff, NAME.xml) instead of --data")
    ap.add_argument("--generated", nargs=3, type=int, metavar=("N", "D", "L"),
                    help="Delicious-shaped generated data: N train rows (and N/10 test rows), "
                         "D features, L labels")
    args = ap.parse_args()
    import numpy as np
    import scipy.sparse as sp

    from sparkxml_kernels import formats
    from sparkxml_kernels.labeltree.forest import train_forest
    from sparkxml_kernels.labeltree.predictor import LabelTreePredictor

    tmp = tempfile.TemporaryDirectory()
    if args.generated:
        from fastxml_distributed import delicious_like

        from sparkxml.synthetic import csr_rows

        n, d, n_labels = args.generated
        X, Y = delicious_like(n + n // 10, d, n_labels)
        parts = [csr_rows(X, Y, 0, n), csr_rows(X, Y, n, n + n // 10)]
        train, te = ((*x, *y, d, n_labels) for x, y in parts)
        train_path = os.path.join(tmp.name, "train.txt")
        formats.write_xc(train_path, *train)
    elif args.arff:
        xml = args.arff + ".xml"
        tr = formats.read_arff_multilabel(args.arff + "-train.arff", xml)
        ts = formats.read_arff_multilabel(args.arff + "-test.arff", xml)
        n_labels = len(tr[6])
        train, te = tr[:6] + (n_labels,), ts[:6] + (n_labels,)
        train_path = os.path.join(tmp.name, "train.txt")
        formats.write_xc(train_path, *train)
    else:
        train_path = os.path.join(args.data, "bibtex_train.txt")
        train = formats.read_xc(train_path)
        te = formats.read_xc(os.path.join(args.data, "bibtex_test.txt"))
    Xtr = sp.csr_matrix((train[2], train[1], train[0]), shape=(len(train[0]) - 1, train[5]))
    Xte = sp.csr_matrix((te[2], te[1], te[0]), shape=(len(te[0]) - 1, te[5]))
    Ytr, Yte = (train[3], train[4]), (te[3], te[4])
    if args.holdout:
        Y = sp.csr_matrix((np.ones(len(train[4])), train[4], train[3]),
                          shape=(Xtr.shape[0], train[6]))
        order = np.random.default_rng(0).permutation(Xtr.shape[0])
        cut = int(round(Xtr.shape[0] * (1.0 - args.holdout)))
        fit, held = np.sort(order[:cut]), np.sort(order[cut:])
        Xf, Yf = Xtr[fit], Y[fit]
        train = (Xf.indptr, Xf.indices, Xf.data, Yf.indptr, Yf.indices, train[5], train[6])
        Xte, Yh = Xtr[held], Y[held]
        Yte = (Yh.indptr, Yh.indices)
        args.anchor_runs = 0
    rows = {}
    for name, kw, beam in SETTINGS:
        if not wanted(name, args.only):
            continue
        runs = []
        for seed in range(args.seeds):
            fit_kw = {k: v for k, v in kw.items() if k != "trees"}
            f = train_forest(*train, range(kw.get("trees", 3)), seed=seed, **fit_kw)
            p = LabelTreePredictor(f, train[5], train[6], 1.0, kw["loss"], beam)
            runs.append(precision_at(p.predict_topk(Xte, 5)[0], Yte))
            print(f"{name} seed {seed}: " + "/".join(f"{runs[-1][k]:.2f}" for k in (1, 3, 5)),
                  flush=True)
        rows[f"sparkxml {name}, seeds 0-{args.seeds - 1}"] = runs
    for name, fn in (("omikuji defaults", lambda: run_omikuji(train_path, Xte, Yte)),
                     ("napkinXC PLT defaults", lambda: run_napkinxc(Xtr, Ytr, Xte, Yte))):
        if not wanted(name, args.only):
            continue
        runs = []
        if not args.anchor_runs:
            continue
        for i in range(args.anchor_runs):
            runs.append(precision_at(fn()["pred"], Yte))
            print(f"{name} run {i}: " + "/".join(f"{runs[-1][k]:.2f}" for k in (1, 3, 5)),
                  flush=True)
        rows[f"{name}, {args.anchor_runs} runs"] = runs
    print("\n| setting | P@1 | P@3 | P@5 (mean (min-max)) |\n|---|---|---|---|")
    for name, runs in rows.items():
        print(f"| {name} | " + " | ".join(summary(runs).split(" / ")) + " |")


if __name__ == "__main__":
    main()
