"""LinearSVC side by side with liblinear, scikit-learn, Spark MLlib (one run, same machine).

    .venv/bin/python benchmarks/linear_svm.py [--data ../shared/data] [--scale-rows 2000000]

Sections (each prints a table):
  a9a   C = 1, no intercept, hinge and squared hinge: primal objective, test accuracy, fit
        seconds: liblinear (-s 3 / -s 1, default eps 0.1), scikit-learn LinearSVC, Spark MLlib
        LinearSVC (100 iterations, regParam = 1/n, standardization off), sparkxml LinearSVC on
        local[2] with numWorkers 1 and 2 (default blocks: one), and numBlocks 2 (CoCoA+).
  kernel one process, one core: seconds for the DCD kernel to reach liblinear's objective within
        1e-3 (relative), against liblinear's own fit time; Shark's schedule against
        liblinear's permutation schedule: passes and seconds to tol.
  kernel-scale  the same on one block of the scale problem (--scale-rows rows, hinge, C =
        0.1: the rows of block 0 of 2, ~rows/2): seconds of each solver to liblinear's
        objective, and passes per second (liblinear's iterations, from its own output).
  dna   one-vs-rest (squared hinge, as liblinear -s 1) and Crammer-Singer accuracies.
  pendigits  dense, unscaled (16 features in 0-100), 10 classes, C = 1, intercept, numWorkers 2:
        one-vs-rest hinge and squared hinge, primal objective (liblinear's problem), test
        accuracy and fit seconds: liblinear through scikit-learn (its default and a tight
        tolerance; on standardised features for the default fit's problem), sparkxml's
        default fit (primal Newton, standardization on), standardization off, dual coordinate
        descent with each schedule; Crammer-Singer beside liblinear -s 4.
  scale a generated sparse problem (--scale-rows rows, 100k hashed features, 30 Zipf draws a
        row, ~18 distinct): hinge fit time beside MLlib LinearSVC (--scale-mllib-iter
        iterations, 0: skip MLlib); numWorkers = 2 on Spark: every worker's peak RSS above
        the RSS right before it reads its first input batch, against the CSR it holds
        (indptr + indices + data); rounds to the duality gap by number of blocks (1, 2, 4)
        in one process. --scale-parts picks among fit, memory, rounds.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from sparkxml_kernels.formats import read_svmlight  # noqa: E402
from sparkxml_kernels.linear import solver  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results, load_average, session  # noqa: E402

RES = None  # this run's Results (main), fed by table()


def load(path, d):
    y, _, ip, ix, v, _ = read_svmlight(path, num_features=d)
    return sp.csr_matrix((v, ix, ip), shape=(len(y), d)), y


def primal(X, y01, w, loss, C=1.0):
    s = np.where(y01 == 1, 1.0, -1.0)
    z = np.maximum(0.0, 1.0 - s * (X @ w))
    return 0.5 * float(w @ w) + C * float(np.sum(z if loss == "hinge" else z * z))


def table(title, header, rows, record=None):
    """Print a table; ``record`` = (case prefix, number of leading columns naming the case,
    {column: unit}) also records those columns of every row in RES."""
    la = " / ".join(f"{x:.1f}" for x in load_average())
    print(f"\n### {title}\n\n(load average 1/5/15 min when printed: {la}, 2 cores)\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    sys.stdout.flush()
    if record is not None and RES is not None:
        prefix, n_case, metrics = record
        for r in rows:
            case = f"{prefix}: " + " / ".join(str(x) for x in r[:n_case])
            for col, unit in metrics.items():
                try:
                    value = float(r[header.index(col)])
                except ValueError:  # an empty cell or a note: not measured
                    continue
                RES.add(case, col, value, unit)


def liblinear_fit(X, y01, args):
    from liblinear.liblinearutil import parameter, problem, train

    prob = problem(np.where(y01 == 1, 1.0, -1.0), X)
    t = time.perf_counter()
    m = train(prob, parameter(args + " -q"))
    sec = time.perf_counter() - t
    w = np.array([m.w[i] for i in range(X.shape[1])])
    return (-w if m.get_labels()[0] != 1 else w), sec


def section_a9a(spark, data, repeats):
    from pyspark.ml.classification import LinearSVC as MLlibSVC
    from pyspark.sql import functions as F
    from sklearn.svm import LinearSVC as SkSVC

    from sparkxml import LinearSVC
    from sparkxml.datasets import from_csr

    X, y = load(os.path.join(data, "a9a", "a9a"), 123)
    Xt, yt = load(os.path.join(data, "a9a", "a9a.t"), 123)
    y01, yt01 = (y > 0).astype(int), (yt > 0).astype(int)
    n = X.shape[0]
    tr = from_csr(spark, X.indptr, X.indices, X.data, 123, columns={"label": y01.astype(float)},
                  numPartitions=2).cache()
    te = from_csr(spark, Xt.indptr, Xt.indices, Xt.data, 123,
                  columns={"label": yt01.astype(float)}, numPartitions=2).cache()
    tr.count(), te.count()
    rows = []

    def acc(w):
        return 100.0 * np.mean(((Xt @ w) > 0).astype(int) == yt01)

    def spark_acc(model):
        return 100.0 * model.transform(te).select(
            F.avg((F.col("prediction") == F.col("label")).cast("double"))).first()[0]

    # warm-up fit: numba cache, Python workers
    LinearSVC(fitIntercept=False, maxIter=1).fit(tr)
    brk = []
    for loss, s in (("hinge", 3), ("squared_hinge", 1)):
        w, sec = liblinear_fit(X, y01, f"-s {s} -c 1")
        rows.append((f"liblinear 2.50 -s {s}", loss, f"{primal(X, y01, w, loss):.4f}",
                     f"{acc(w):.2f}", f"{sec:.3f}", ""))
        sk = SkSVC(C=1.0, loss=loss, fit_intercept=False, dual=True, max_iter=1000)
        t = time.perf_counter()
        sk.fit(X, y01)
        sec = time.perf_counter() - t
        rows.append(("scikit-learn LinearSVC", loss, f"{primal(X, y01, sk.coef_[0], loss):.4f}",
                     f"{acc(sk.coef_[0]):.2f}", f"{sec:.3f}", ""))
        mllib_sec = None
        if loss == "hinge":
            est = MLlibSVC(regParam=1.0 / n, maxIter=100, fitIntercept=False,
                           standardization=False, tol=1e-6)
            t = time.perf_counter()
            mm = est.fit(tr)
            mllib_sec = time.perf_counter() - t
            w = mm.coefficients.toArray()
            rows.append(("Spark MLlib LinearSVC, 100 it, local[2]", loss,
                         f"{primal(X, y01, w, loss):.4f}", f"{spark_acc(mm):.2f}",
                         f"{mllib_sec:.2f}", "1.00"))
            mllib_hinge = mllib_sec
        for nw, nb in ((1, 0), (2, 0), (1, 1)):
            times, parts = [], []
            for _ in range(repeats):
                t = time.perf_counter()
                m = LinearSVC(fitIntercept=False, loss=loss, numWorkers=nw, numBlocks=nb,
                              maxIter=100, standardization=False).fit(tr)
                times.append(time.perf_counter() - t)
                parts.append(_breakdown(m.summary, times[-1]))
            sec = float(np.median(times))
            brk.append((f"{loss} numWorkers={nw} numBlocks={nb or 'default'}", f"{sec:.2f}")
                       + tuple(f"{np.median([p[j] for p in parts]):.2f}" for j in range(7)))
            w = m.coefficients.toArray()
            s_ = m.summary
            label = (f"sparkxml LinearSVC numWorkers={nw}"
                     + (f" numBlocks={nb}" if nb else " (default: 2 blocks)"))
            rows.append((label + f", {s_.totalIterations} rounds, gap/P "
                         f"{s_.gapHistory[-1][0] / s_.primalHistory[-1][0]:.1e}", loss,
                         f"{primal(X, y01, w, loss):.4f}", f"{spark_acc(m):.2f}",
                         f"{sec:.2f}", f"{sec / mllib_hinge:.3f}"))
    table("a9a, C=1, no intercept (fit s: median of %d for sparkxml)" % repeats,
          ["system", "loss", "primal", "test acc %", "fit s", "time / MLlib's"], rows,
          record=("a9a C=1", 2, {"primal": "", "test acc %": "%", "fit s": "s"}))
    table("where sparkxml's a9a fit time goes (s, medians; load/solver: slowest rank)",
          ["fit", "total", "checks job", "training job", "in tasks: load", "connect",
           "solver", "job outside the tasks", "driver"], brk)


def _breakdown(summary, fit_seconds):
    """(checks job, training job, load in the tasks, connect (address exchange + sockets),
    solver, the training job's time outside the tasks (shuffle, scheduling, result
    transfer), driver time outside both jobs) of one fit, in seconds."""
    info = summary.workerInfo
    load = max(i["load_seconds"] for i in info)
    connect = max(i["connected_seconds"] - i["load_seconds"] for i in info)
    solver_s = max(i["train_seconds"] for i in info)
    task = max(i["connected_seconds"] + i["train_seconds"] for i in info)
    checks = summary.checksSeconds or 0.0
    return (checks, summary.trainingSeconds, load, connect, solver_s,
            summary.trainingSeconds - task, fit_seconds - checks - summary.trainingSeconds)


def section_kernel(data):
    X, y = load(os.path.join(data, "a9a", "a9a"), 123)
    y01 = (y > 0).astype(np.int32)
    ip, ix, v = X.indptr, X.indices, X.data
    solver.fit_local(ip, ix, v, y01, 123, max_iter=1, local_passes=1)  # compile / load cache
    rows, rows2 = [], []
    for loss, s in (("hinge", 3), ("squared_hinge", 1)):
        w, ll_sec = liblinear_fit(X, y01, f"-s {s} -c 1")
        ll_sec = min(ll_sec, min(liblinear_fit(X, y01, f"-s {s} -c 1")[1] for _ in range(2)))
        target = primal(X, y01, w, loss)
        for sched in ("permutation", "shark"):
            cap, sec, P = 1, None, None
            while cap <= 1000:
                t = time.perf_counter()
                r = solver.fit_local(ip, ix, v, y01, 123, loss=loss, schedule=sched, tol=1e-12,
                                     max_iter=0, local_passes=cap)
                r = solver.fit_local(ip, ix, v, y01, 123, loss=loss, schedule=sched, tol=1e-12,
                                     max_iter=1, local_passes=cap)
                sec = time.perf_counter() - t
                P = r.primal[-1][0]
                if P <= target * (1 + 1e-3):
                    break
                cap = int(cap * 1.5) + 1
            # time the successful run alone (the loop above ran it twice: one stats pass
            # more), best of 3 as liblinear's
            sec = np.inf
            for _ in range(3):
                t = time.perf_counter()
                solver.fit_local(ip, ix, v, y01, 123, loss=loss, schedule=sched, tol=1e-12,
                                 max_iter=1, local_passes=cap)
                sec = min(sec, time.perf_counter() - t)
            rows.append((loss, sched, cap, f"{P:.4f}", f"{target:.4f}", f"{sec:.3f}",
                         f"{ll_sec:.3f}", f"{sec / ll_sec:.2f}"))
            for tol in (0.1, 1e-3):
                t = time.perf_counter()
                r = solver.fit_local(ip, ix, v, y01, 123, loss=loss, schedule=sched, tol=tol,
                                     max_iter=1, local_passes=1000)
                sec2 = time.perf_counter() - t
                rows2.append((loss, sched, tol, r.local_passes, f"{r.primal[-1][0]:.4f}",
                              f"{r.gap[-1][0]:.3g}", f"{sec2:.3f}"))
    table("kernel alone, one core: passes (capped) to reach liblinear's objective within 1e-3",
          ["loss", "schedule", "passes", "primal", "liblinear primal", "kernel s",
           "liblinear s", "ratio"], rows,
          record=("kernel one core", 2, {"kernel s": "s", "liblinear s": "s", "ratio": "x"}))
    table("Shark vs permutation schedule, one block, to the local tol",
          ["loss", "schedule", "tol", "passes", "primal", "gap", "s"], rows2)


def _liblinear_iterations(X, y01, args):
    """(w, seconds, iterations) of liblinear, its "#iter" read from its own stdout."""
    import re
    import tempfile

    from liblinear.liblinearutil import parameter, problem, train

    prob = problem(np.where(y01 == 1, 1.0, -1.0), X)
    with tempfile.TemporaryFile(mode="w+") as out:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            t = time.perf_counter()
            m = train(prob, parameter(args))
            sec = time.perf_counter() - t
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        out.seek(0)
        found = re.findall(r"#iter = (\d+)", out.read())
    w = np.array([m.w[i] for i in range(X.shape[1])])
    return (-w if m.get_labels()[0] != 1 else w), sec, int(found[-1]) if found else -1


def section_kernel_scale(rows_n):
    """One CoCoA+ block of the scale problem, one core: each solver to liblinear's objective."""
    X, y = synthetic(rows_n)
    X, y = X[::2], y[::2]  # block 0 of fit_local(num_blocks=2): rows i with i mod 2 == 0
    C = 0.1
    small = slice(0, 1000)
    solver.fit_local(X[small].indptr, X[small].indices, X[small].data, y[small], X.shape[1],
                     C=C, max_iter=1, local_passes=1)  # compile / load cache
    runs = [_liblinear_iterations(X, y, f"-s 3 -c {C}") for _ in range(3)]
    w, ll_sec, ll_iter = min(runs, key=lambda r: r[1])
    target = primal(X, y, w, "hinge", C)
    rows = [("liblinear -s 3 (eps 0.1)", ll_iter, f"{target:.2f}", f"{ll_sec:.2f}",
             f"{ll_iter / ll_sec:.1f}", "1.00")]
    for sched in ("shark", "permutation"):
        cap, P = 10, None
        while cap <= 2000:
            r = solver.fit_local(X.indptr, X.indices, X.data, y, X.shape[1], C=C,
                                 schedule=sched, tol=1e-12, max_iter=1, local_passes=cap)
            P = r.primal[-1][0]
            if P <= target:
                break
            cap = int(cap * 1.25) + 1
        sec = np.inf
        for _ in range(3):
            t = time.perf_counter()
            solver.fit_local(X.indptr, X.indices, X.data, y, X.shape[1], C=C, schedule=sched,
                             tol=1e-12, max_iter=1, local_passes=cap)
            sec = min(sec, time.perf_counter() - t)
        rows.append((f"sparkxml DCD kernel, {sched}", cap, f"{P:.2f}", f"{sec:.2f}",
                     f"{cap / sec:.1f}", f"{sec / ll_sec:.2f}"))
    table(f"kernel alone, one core, one block of the scale problem ({X.shape[0]} rows x "
          f"{X.shape[1]} features, {X.nnz / X.shape[0]:.1f} non-zeros a row), hinge, C={C}: "
          f"passes to liblinear's objective",
          ["solver", "passes", "primal", "s (best of 3)", "passes / s", "time / liblinear's"],
          rows, record=("kernel scale block", 1, {"s (best of 3)": "s", "passes / s": "/s",
                                                  "time / liblinear's": "x"}))


def section_dna(spark, data):
    from liblinear.liblinearutil import parameter, predict, problem, train
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator

    from sparkxml import LinearSVC
    from sparkxml.datasets import from_csr

    X, y = load(os.path.join(data, "dna", "dna.scale"), 180)
    Xt, yt = load(os.path.join(data, "dna", "dna.scale.t"), 180)
    tr = from_csr(spark, X.indptr, X.indices, X.data, 180, columns={"label": y - 1},
                  numPartitions=2)
    te = from_csr(spark, Xt.indptr, Xt.indices, Xt.data, 180, columns={"label": yt - 1},
                  numPartitions=2)
    ev = MulticlassClassificationEvaluator(metricName="accuracy")
    rows = []
    for name, args, kw in (("OVR squared hinge", "-s 1", dict(loss="squared_hinge")),
                           ("OVR hinge", "-s 3", dict(loss="hinge")),
                           ("Crammer-Singer", "-s 4", dict(multiClass="crammer_singer"))):
        for eps in ("0.1", "1e-3"):
            m = train(problem(y, X), parameter(f"{args} -c 1 -e {eps} -q"))
            p, _, _ = predict(yt, Xt, m, "-q")
            rows.append((name, f"liblinear {args} -e {eps}",
                         f"{100 * np.mean(np.array(p) == yt):.2f}", ""))
        t = time.perf_counter()
        model = LinearSVC(fitIntercept=False, numWorkers=2, standardization=False,
                          **kw).fit(tr)
        sec = time.perf_counter() - t
        rows.append((name, "sparkxml (tol 1e-3)", f"{100 * ev.evaluate(model.transform(te)):.2f}",
                     f"{sec:.2f}"))
    table("dna, C=1, no intercept", ["problem", "system", "test acc %", "fit s"], rows,
          record=("dna C=1", 2, {"test acc %": "%", "fit s": "s"}))


def _ovr_primal(W, b, X, lab, loss):
    """liblinear's one-vs-rest primal (bias regularised), summed over the classes."""
    tot = 0.0
    for k in range(W.shape[0]):
        z = np.maximum(0.0, 1.0 - np.where(lab == k, 1.0, -1.0) * (X @ W[k] + b[k]))
        tot += 0.5 * (W[k] @ W[k] + b[k] ** 2) + float(np.sum(z if loss == "hinge" else z * z))
    return tot


def section_pendigits(spark, data):
    import warnings

    from pyspark.ml.evaluation import MulticlassClassificationEvaluator
    from sklearn.svm import LinearSVC as SkSVC

    from sparkxml import LinearSVC
    from sparkxml.datasets import from_csr

    X, y = load(os.path.join(data, "pendigits", "pendigits"), 16)
    Xt, yt = load(os.path.join(data, "pendigits", "pendigits.t"), 16)
    lab, labt = y - 1, yt - 1
    sd = np.asarray(X.todense()).std(axis=0, ddof=1)
    inv = np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 0.0)
    Xs = X @ sp.diags(inv)
    tr = from_csr(spark, X.indptr, X.indices, X.data, 16, columns={"label": lab},
                  numPartitions=2).cache()
    te = from_csr(spark, Xt.indptr, Xt.indices, Xt.data, 16, columns={"label": labt},
                  numPartitions=2).cache()
    tr.count(), te.count()
    ev = MulticlassClassificationEvaluator(metricName="accuracy")
    LinearSVC(maxIter=1, numWorkers=1).fit(tr)  # warm-up: numba cache, Python workers
    rows = []
    for loss in ("hinge", "squared_hinge"):
        for label, kw, Xf in (("scikit-learn LinearSVC (liblinear), defaults", {}, X),
                              ("scikit-learn, tol 1e-8, max_iter 100000",
                               dict(tol=1e-8, max_iter=100_000), X),
                              ("scikit-learn, standardised features, tol 1e-8",
                               dict(tol=1e-8, max_iter=100_000), Xs)):
            if loss == "hinge" and "100000" in label and Xf is X:
                kw = dict(tol=1e-8, max_iter=10_000)  # (100000 iterations: ~1 min, still short)
                label = "scikit-learn, tol 1e-8, max_iter 10000"
            sk = SkSVC(C=1.0, loss=loss, **kw)
            t = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                sk.fit(Xf, lab)
            sec = time.perf_counter() - t
            stopped = any("converge" in str(c.message) for c in caught)
            Xe = Xt @ sp.diags(inv) if Xf is Xs else Xt
            rows.append((loss, label + (" (stopped at max_iter)" if stopped else ""),
                         f"{_ovr_primal(sk.coef_, sk.intercept_, Xf, lab, loss):.4f}"
                         + (" (standardised)" if Xf is Xs else ""),
                         f"{100 * np.mean(sk.predict(Xe) == labt):.2f}", f"{sec:.2f}", "", ""))
        for label, kw in (("sparkxml default (standardization on)", {}),
                          ("sparkxml standardization=False", dict(standardization=False)),
                          ("sparkxml standardization=False, solver=dcd, schedule=shark",
                           dict(standardization=False, solver="dcd")),
                          ("sparkxml standardization=False, solver=dcd, schedule=permutation",
                           dict(standardization=False, solver="dcd", schedule="permutation")),
                          ("sparkxml solver=dcd (standardization on)", dict(solver="dcd"))):
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = LinearSVC(loss=loss, numWorkers=2, **kw).fit(tr)
            sec = time.perf_counter() - t
            s_ = m.summary
            W, b = m.coefficientMatrix.toArray(), m.interceptVector.toArray()
            std = kw.get("standardization", True)
            P = _ovr_primal(W * sd, b, Xs, lab, loss) if std else _ovr_primal(W, b, X, lab, loss)
            rel = max(g / p for g, p in zip(s_.gapHistory[-1], s_.primalHistory[-1]))
            rows.append((loss, label, f"{P:.4f}" + (" (standardised)" if std else ""),
                         f"{100 * ev.evaluate(m.transform(te)):.2f}", f"{sec:.2f}",
                         f"{s_.totalIterations}{'' if s_.converged else ' (maxIter)'}",
                         f"{rel:.1e}"))
    for label, kw, Xf in (("liblinear -s 4 (scikit-learn crammer_singer)", {}, X),
                          ("liblinear -s 4, standardised features", {}, Xs)):
        sk = SkSVC(C=1.0, multi_class="crammer_singer")
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk.fit(Xf, lab)
        sec = time.perf_counter() - t
        Xe = Xt @ sp.diags(inv) if Xf is Xs else Xt
        rows.append(("crammer_singer", label, "", f"{100 * np.mean(sk.predict(Xe) == labt):.2f}",
                     f"{sec:.2f}", "", ""))
    for label, kw in (("sparkxml default (standardization on)", {}),
                      ("sparkxml standardization=False", dict(standardization=False))):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = LinearSVC(multiClass="crammer_singer", numWorkers=2, **kw).fit(tr)
        sec = time.perf_counter() - t
        s_ = m.summary
        rows.append(("crammer_singer", label, "", f"{100 * ev.evaluate(m.transform(te)):.2f}",
                     f"{sec:.2f}", f"{s_.totalIterations}{'' if s_.converged else ' (maxIter)'}",
                     f"{s_.gapHistory[-1][0] / s_.primalHistory[-1][0]:.1e}"))
    table("pendigits, C=1, intercept (bias regularised), numWorkers=2 (one block: one task)",
          ["loss", "system", "primal", "test acc %", "fit s", "rounds", "gap/P"], rows,
          record=("pendigits C=1", 2, {"test acc %": "%", "fit s": "s"}))


def synthetic(n, d=100_000, nnz=30, seed=0):
    rng = np.random.default_rng(seed)
    cols = rng.zipf(1.3, size=n * nnz) % d
    indptr = np.arange(0, n * nnz + 1, nnz, dtype=np.int64)
    cols = cols.reshape(n, nnz)
    cols.sort(axis=1)
    X = sp.csr_matrix((np.ones(n * nnz), cols.ravel().astype(np.int32), indptr), shape=(n, d))
    X.sum_duplicates()
    w = rng.normal(size=d)
    m = X @ w
    y = (m + rng.normal(scale=np.std(m), size=n) > np.median(m)).astype(np.int32)
    return X, y


def _memory_rows(summary):
    """Per rank: rows, CSR MiB (indptr + indices + data held), RSS at the task's start, RSS
    right before its first input batch is read (after the kernels and Arrow's compute
    functions are loaded), peak RSS, and the peak above the input start over the CSR."""
    out = []
    for i in summary.workerInfo:
        csr, r0, r1, pk = (i["csr_bytes"], i["rss_start_bytes"], i["rss_input_start_bytes"],
                           i["peak_rss_bytes"])
        out.append((i["rank"], i["n_rows"], f"{csr / 2**20:.0f}", f"{r0 / 2**20:.0f}",
                    f"{r1 / 2**20:.0f}", f"{pk / 2**20:.0f}", f"{(pk - r1) / csr:.2f}",
                    f"{(pk - r0) / csr:.2f}"))
    return out


MEMORY_HEADER = ["rank", "rows", "CSR MiB", "RSS at task start MiB",
                 "RSS at input start MiB", "peak RSS MiB", "(peak - input start) / CSR",
                 "(peak - task start) / CSR"]
MEMORY_RECORD = {"peak RSS MiB": "MiB", "(peak - input start) / CSR": "x"}


def section_scale(spark, rows_n, mllib_iter, parts, blocks=(1, 2, 4)):
    """``parts``: any of fit (hinge beside MLlib, unless mllib_iter is 0), memory (squared
    hinge with intercept, numBlocks = 2), rounds (one process, 1, 2, 4 blocks)."""
    t = time.perf_counter()
    X, y = synthetic(rows_n)
    print(f"\nscale: {rows_n} rows x {X.shape[1]} features, {X.nnz / rows_n:.1f} non-zeros a "
          f"row (distinct), generated in {time.perf_counter() - t:.1f} s", flush=True)
    C = 0.1
    if {"fit", "memory"} & set(parts):
        from pyspark.ml.classification import LinearSVC as MLlibSVC

        from sparkxml import LinearSVC
        from sparkxml.datasets import from_csr

        df = from_csr(spark, X.indptr, X.indices, X.data, X.shape[1],
                      columns={"label": y.astype(float)}, numPartitions=4).cache()
        df.count()
    if "fit" in parts:
        rows = []
        ml_sec = None
        if mllib_iter:
            # side by side with MLlib (hinge, no intercept: the problem both solve)
            t = time.perf_counter()
            mm = MLlibSVC(regParam=1.0 / (C * rows_n), maxIter=mllib_iter, fitIntercept=False,
                          standardization=False, tol=1e-6).fit(df)
            ml_sec = time.perf_counter() - t
            w = mm.coefficients.toArray()
            rows.append((f"Spark MLlib LinearSVC, {mllib_iter} iterations",
                         f"{primal(X, y, w, 'hinge', C):.2f}", "", f"{ml_sec:.1f}", "1.00"))
        t = time.perf_counter()
        m = LinearSVC(numWorkers=2, loss="hinge", C=C, fitIntercept=False,
                      standardization=False).fit(df)
        sec = time.perf_counter() - t
        s = m.summary
        rows.append((f"sparkxml LinearSVC numWorkers=2 (default {len(s.workerInfo)} blocks), "
                     f"{s.totalIterations} rounds",
                     f"{primal(X, y, m.coefficients.toArray(), 'hinge', C):.2f}",
                     f"{s.gapHistory[-1][0] / s.primalHistory[-1][0]:.1e}", f"{sec:.1f}",
                     f"{sec / ml_sec:.3f}" if ml_sec else "(MLlib not run)"))
        table(f"scale: {rows_n} rows x 100k features, hinge, C={C}, no intercept, local[2]",
              ["system", "primal", "gap/P", "fit s", "time / MLlib's"], rows,
              record=(f"scale {rows_n} rows hinge", 1, {"fit s": "s", "time / MLlib's": "x"}))
        info = s.workerInfo
        table("where that sparkxml fit goes (s; load/solver: slowest rank)",
              ["total", "row count job", "training job", "in tasks: load", "connect",
               "solver", "job outside the tasks", "driver", "rounds", "block passes",
               "polishes", "solver: local / polish / evaluate / allreduce (rank 0)"],
              [(f"{sec:.1f}",) + tuple(f"{x:.1f}" for x in _breakdown(s, sec))
               + (s.totalIterations, sum(i["local_passes"] for i in info), info[0]["polishes"],
                  " / ".join(f"{info[0][k + '_seconds']:.1f}"
                             for k in ("local", "polish", "evaluate", "allreduce")))])
        table(f"worker memory of that fit ({rows_n} rows, hinge, numWorkers = 2, "
              f"{len(info)} blocks)", MEMORY_HEADER, _memory_rows(s),
              record=(f"scale {rows_n} rows hinge fit, rank", 1, MEMORY_RECORD))
    if "memory" in parts:
        t = time.perf_counter()
        m = LinearSVC(numWorkers=2, numBlocks=2, loss="squared_hinge", C=0.1, maxIter=30,
                      fitIntercept=True, standardization=False).fit(df)
        sec = time.perf_counter() - t
        s = m.summary
        table(f"worker memory: {rows_n} rows x 100k features, squared hinge, intercept, "
              f"numWorkers=numBlocks=2, fit {sec:.1f} s, {s.totalIterations} rounds, final "
              f"gap/P {s.gapHistory[-1][0] / s.primalHistory[-1][0]:.2e}", MEMORY_HEADER,
              _memory_rows(s),
              record=(f"scale {rows_n} rows squared hinge memory fit, rank", 1, MEMORY_RECORD))
    if {"fit", "memory"} & set(parts):
        df.unpersist()
    if "rounds" in parts:
        rows = []
        for B in blocks:
            t = time.perf_counter()
            r = solver.fit_local(X.indptr, X.indices, X.data, y, X.shape[1],
                                 loss="squared_hinge", C=0.1, num_blocks=B,
                                 local_passes=1000 if B == 1 else 5, max_iter=200, tol=1e-3,
                                 fit_intercept=True)
            sec = time.perf_counter() - t
            g = np.array(r.gap)[:, 0] / np.array(r.primal)[:, 0]
            first = lambda thr: next((i for i, x in enumerate(g) if x <= thr), None)  # noqa: E731
            rows.append((B, first(1e-2), first(1e-3), r.rounds, f"{g[-1]:.2e}", r.local_passes,
                         f"{sec:.1f}"))
            print(f"  ({B} block(s) done: {sec:.1f} s)", flush=True)
        # (the gap is evaluated after every round and again after every polish)
        table(f"rounds to relative duality gap by number of blocks (= workers), one process, "
              f"{rows_n} rows, squared hinge, C=0.1, intercept, tol 1e-3",
              ["blocks", "gap evaluations to 1e-2", "gap evaluations to 1e-3", "rounds run",
               "final gap/P", "block passes", "s"], rows,
              record=(f"scale {rows_n} rows rounds, blocks", 1, {"rounds run": "rounds",
                                                                 "s": "s"}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scale-rows", type=int, default=2_000_000)
    ap.add_argument("--scale-mllib-iter", type=int, default=100,
                    help="MLlib LinearSVC iterations beside the scale fit; 0 skips MLlib (its 100 "
                         "iterations took 149 s at 500k rows, load 24-27; several times "
                         "that at 2M)")
    ap.add_argument("--scale-parts", default="fit,memory,rounds",
                    help="of the scale section: fit (hinge beside MLlib, with its worker "
                         "memory), memory (squared hinge, intercept), rounds (1, 2, 4 blocks "
                         "in one process)")
    ap.add_argument("--scale-blocks", default="1,2,4",
                    help="block counts of the scale section's rounds table (one process each "
                         "can run them side by side)")
    ap.add_argument("--sections", default="kernel,a9a,dna,pendigits,scale")
    a = ap.parse_args()
    global RES
    RES = Results("linear_svm")
    secs = a.sections.split(",")
    if "kernel" in secs:
        section_kernel(a.data)
    if "kernel-scale" in secs:
        section_kernel_scale(a.scale_rows)
    parts = a.scale_parts.split(",")
    blocks = [int(b) for b in a.scale_blocks.split(",")]
    if "scale" in secs and not {"fit", "memory"} & set(parts):
        section_scale(None, a.scale_rows, a.scale_mllib_iter, parts, blocks)  # no Spark needed
        secs = [x for x in secs if x != "scale"]
    if set(secs) & {"a9a", "dna", "pendigits", "scale"}:
        spark = session("local[2]", app="linear-svm-bench", conf={"spark.driver.memory": "8g"})
        try:
            if "a9a" in secs:
                section_a9a(spark, a.data, a.repeats)
            if "dna" in secs:
                section_dna(spark, a.data)
            if "pendigits" in secs:
                section_pendigits(spark, a.data)
            if "scale" in secs:
                section_scale(spark, a.scale_rows, a.scale_mllib_iter, parts, blocks)
        finally:
            spark.stop()
    RES.write()


if __name__ == "__main__":
    main()
