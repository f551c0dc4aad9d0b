"""Parabel and Bonsai on Delicious-shaped generated data, level-wise ("distributed") and
replicated, beside omikuji, and prediction through ``transform`` and ``load_model``, in one
run.

    .venv/bin/python benchmarks/labeltree_scale.py [--train 500000] [--test 20000]
        [--features 100000] [--labels 50000] [--workers 2] [--predict-rows 100000]
        [--no-replicated] [--no-bonsai] [--no-distributed] [--trees 3] [--data-cache DIR]

The data come from ``fastxml_distributed.delicious_like`` (FastXML's distributed benchmark's
topic-model generator, ~19 labels and ~18 tf-idf features a row) at the sizes given. The
figures: fit seconds (wall clock, after a small warm-up fit that loads the numba cache),
P@1/3/5 on the test rows, and for the level-wise fit the rows and peak RSS (``VmHWM``) of
its largest task against the training set's rows and the replicated task's estimated bytes
(``_training_info["replicated_task_bytes"]``). Prediction: ``--predict-rows`` rows (the test
rows repeated) scored by ``transform`` (forced by an aggregate over the predictions), by
``sparkxml_kernels.load_model(path).predict_topk`` in this process, and by omikuji's
row-by-row ``predict`` (2 threads trained; its Python API scores one row a call).
Bonsai trains in the default (replicated) mode. ``--no-replicated`` / ``--no-bonsai`` leave
those fits out (at the largest sizes each costs as much as the level-wise Parabel fit or
several times it); prediction then uses the level-wise model, whose trees are the
replicated ones (only its split nodes' weights differ). ``--no-distributed`` leaves the
level-wise fit out. ``--trees`` sets every fit's ``numTrees`` and omikuji's ``n_trees``
(default 3, the defaults of both); with another number the cases' names say it. A
replicated fit's note gives its tasks' seconds (how evenly the nodes were dealt).
``--data-cache DIR`` keeps the generated rows in ``DIR`` (an ``.npz`` named by the sizes) and
reads them from there on the next run: 500k rows take about 15 minutes to generate on one
core.
"""
import argparse
import gc
import hashlib
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results, load_average, session  # noqa: E402
from fastxml_bibtex import fmt, precision_at  # noqa: E402
from fastxml_distributed import delicious_like, frame  # noqa: E402


def write_xc(path, X, Y, start, stop, n_features, n_labels):
    """Rows [start, stop) in the XC text format omikuji reads."""
    xi, xj, xv = X
    yi, yj = Y
    with open(path, "w") as f:
        f.write(f"{stop - start} {n_features} {n_labels}\n")
        for r in range(start, stop):
            labs = ",".join(str(v) for v in yj[yi[r]:yi[r + 1]])
            feats = " ".join(f"{j}:{v:.6g}" for j, v in zip(xj[xi[r]:xi[r + 1]],
                                                              xv[xi[r]:xi[r + 1]]))
            f.write(f"{labs} {feats}\n")


def cached_rows(cache_dir, rows, D, L):
    """``delicious_like(rows, D, L)``, read from / written to ``cache_dir`` when given."""
    if cache_dir is None:
        return delicious_like(rows, D, L)
    path = os.path.join(cache_dir, f"delicious_like_{rows}x{D}x{L}_seed0.npz")
    if os.path.exists(path):
        z = np.load(path)
        return (z["xi"], z["xj"], z["xv"]), (z["yi"], z["yj"])
    X, Y = delicious_like(rows, D, L)
    os.makedirs(cache_dir, exist_ok=True)
    tmp = path + ".tmp.npz"
    np.savez(tmp, xi=X[0], xj=X[1], xv=X[2], yi=Y[0], yj=Y[1])
    os.replace(tmp, path)
    return X, Y


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--train", type=int, default=500000)
    ap.add_argument("--test", type=int, default=20000)
    ap.add_argument("--features", type=int, default=100000)
    ap.add_argument("--labels", type=int, default=50000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--trees", type=int, default=3)
    ap.add_argument("--predict-rows", type=int, default=100000)
    ap.add_argument("--no-replicated", action="store_true")
    ap.add_argument("--no-bonsai", action="store_true")
    ap.add_argument("--no-distributed", action="store_true")
    ap.add_argument("--no-omikuji", action="store_true")
    ap.add_argument("--no-predict", action="store_true",
                    help="skip the 100k-row prediction timings")
    ap.add_argument("--data-cache", default=None)
    ap.add_argument("--generate-only", action="store_true",
                    help="write the --data-cache file and stop")
    args = ap.parse_args()
    if args.no_distributed and args.no_replicated:
        ap.error("--no-distributed and --no-replicated leave no Parabel fit")
    import scipy.sparse as sp

    from sparkxml import Bonsai, Parabel
    from sparkxml.synthetic import csr_rows

    res = Results("labeltree_scale")
    n, D, L = args.train, args.features, args.labels
    # the cases of each training size (and forest size) stay apart
    scale = (f", {args.trees} tree{'s' * (args.trees > 1)}" if args.trees != 3 else "") \
        + f" ({n // 1000}k rows)"
    t0 = time.perf_counter()
    X, Y = cached_rows(args.data_cache, n + args.test, D, L)
    if args.generate_only:
        return
    print(f"data: {n} train / {args.test} test rows, {D} features, {L} labels, "
          f"{X[0][n] / n:.1f} features and {Y[0][n] / n:.1f} labels a train row; ready "
          f"(generated or read from --data-cache) in {time.perf_counter() - t0:.0f} s", flush=True)
    (xi, xj, xv), Yte = csr_rows(X, Y, n, n + args.test)
    Xte = sp.csr_matrix((xv, xj, xi), shape=(args.test, D))
    rows = {}
    # local mode runs the tasks in the driver's JVM: at 500k rows the model (GBs) passes
    # through it in chunks, more than the default 1 GB heap holds at once
    spark = session(master=f"local[{args.workers}]", app="labeltree-scale",
                    conf={"spark.driver.memory": "8g"})
    try:
        train = frame(spark, X, Y, D, 0, n).repartition(args.workers).cache()
        train.count()
        Parabel(numTrees=1, numWorkers=1).fit(train.limit(200))  # warm-up: numba cache
        configs = [] if args.no_distributed else [("Parabel distributed", Parabel,
                                                   "distributed")]
        if not args.no_replicated:
            configs.append(("Parabel replicated", Parabel, "replicated"))
        if not args.no_bonsai:
            configs.append(("Bonsai replicated", Bonsai, "replicated"))
        models: dict = {}
        digests = {}
        for name, cls, mode in configs:
            t0 = time.perf_counter()
            model = cls(numWorkers=args.workers, trainingMode=mode, seed=0,
                        numTrees=args.trees).fit(train)
            fit = time.perf_counter() - t0
            labels, _ = model.predictor.predict_csr(Xte, 5)
            p = precision_at([r[r >= 0].tolist() for r in labels], Yte)
            info = model._training_info
            note = f"{mode}, numWorkers {args.workers}"
            # what a task grew by while it ran (peak RSS less its RSS at the start): the
            # data and work it held, without the worker's imports and compiled kernels
            # (a task loads its kernels before its start figure: TaskMemory(kernels=...))
            names = (("split_stage", "subtree_stage") if mode == "distributed" else ())
            stages = [info[k] for k in names if k in info] or [info]
            tasks = [dict(t, stage=k) for k in names if k in info for t in info[k]["tasks"]] \
                or [dict(t, stage="replicated") for t in info["tasks"]]
            top = max(tasks, key=lambda t: t["peak_rss_bytes"] - t["rss_start_bytes"])
            grown = top["peak_rss_bytes"] - top["rss_start_bytes"]
            kernels = max(t.get("kernel_load_bytes", 0) for t in tasks)
            note += (f"; largest task growth {grown >> 20} MiB ({top['stage']}, rank "
                     f"{top.get('rank')}, {top.get('rows')} rows, from "
                     f"{top['rss_start_bytes'] >> 20} MiB; loading the kernels in a "
                     f"fresh worker: up to {kernels >> 20} MiB more)")
            res.add(name + scale, "largest task RSS growth", grown / 2**20, "MiB")
            res.add(name + scale, "largest kernel load", kernels / 2**20, "MiB")
            if mode == "distributed":
                biggest = max(t["rows"] for lv in stages for t in lv["tasks"])
                peak = max(t["peak_rss_bytes"] for t in info["tasks"])
                note += (f"; largest task {biggest} rows ({100 * biggest / n:.0f}% of the "
                         f"training rows), peak RSS {peak >> 20} MiB vs replicated task "
                         f"estimate {info['replicated_task_bytes'] >> 20} MiB")
                res.add(name + scale, "largest task rows", biggest / n * 100, "%")
                res.add(name + scale, "largest task peak RSS", peak / 2**20, "MiB")
                split = info.get("split_stage")
                if split:
                    t0 = split["tasks"][0]
                    print(f"{name}: split nodes {split['nodes']} in {split['seconds']:.1f} s "
                          f"({t0['waves']} waves, {t0['rounds']} rounds; rank 0 visited blocks "
                          f"{t0['visit_seconds']:.1f} s, exchanged {t0['exchange_seconds']:.1f} s), "
                          "task rows " + ", ".join(str(t["rows"]) for t in split["tasks"])
                          + ", peak RSS " + ", ".join(f"{t['peak_rss_bytes'] >> 20} MiB"
                                                      for t in split["tasks"]), flush=True)
                below = info.get("subtree_stage")
                print(f"{name}: representations {info['representation_seconds']:.1f} s, "
                      f"clustering {info['cluster_seconds']:.1f} s"
                      + (f", subtrees {below['subtrees']} ({below['nodes']} nodes) in "
                         f"{below['seconds']:.1f} s, {len(below['tasks'])} tasks, the "
                         f"longest {max(t['task_seconds'] for t in below['tasks']):.1f} s"
                         if below else ""), flush=True)
            else:
                note += "; tasks " + ", ".join(f"{t['task_seconds']:.1f}"
                                               for t in info["tasks"]) + " s"
            rows[name] = (p, fit, note)
            res.add(name + scale, "fit", fit, "s", note=note)
            for k in (1, 3, 5):
                res.add(name + scale, f"P@{k}", p[k], "%")
            # a digest of each array, not the model: at 500k rows a forest is GBs, and the
            # driver holds one at a time
            digests[name] = {k: hashlib.sha256(np.ascontiguousarray(v).view(np.uint8))
                             .hexdigest() for k, v in model._arrays.items()}
            if not args.no_predict and (name == "Parabel replicated" or (
                    name == "Parabel distributed" and args.no_replicated)):
                models[name] = model
            del model
            gc.collect()
            print(f"{name}: P@1/3/5 {fmt(p)}, fit {fit:.1f} s; {note}", flush=True)
        if "Parabel replicated" in digests and "Parabel distributed" in digests:
            # the same trees; the weights differ at the split nodes, which only the
            # level-wise mode solves over row blocks
            a, b = digests["Parabel replicated"], digests["Parabel distributed"]
            same = sorted(k for k in a if a[k] == b.get(k))
            print(f"arrays equal in both modes: {', '.join(same) or 'none'}", flush=True)
        if not args.no_predict:
            transform_s, load_s, big = _predict_times(spark, models, Xte, D, args)
    finally:
        spark.stop()
    gc.collect()
    if not args.no_omikuji:
        _omikuji(X, Y, n, D, L, Xte, Yte, rows, res, None if args.no_predict else big,
                 args.trees, scale)
    print(f"\nload average {load_average()[0]:.1f} at the end (2 cores)\n")
    print("| system | P@1/3/5 | fit s | note |\n|---|---|---|---|")
    for name, (p, fit, note) in rows.items():
        print(f"| {name} | {fmt(p)} | {fit:.1f} | {note} |")
    if not args.no_predict:
        print(f"\nPredict {big.shape[0]} rows (top 5): transform {transform_s:.1f} s, "
              f"load_model(...).predict_topk {load_s:.1f} s")
        for name, v in (("transform", transform_s), ("load_model predict_topk", load_s)):
            res.add(f"predict {big.shape[0]} rows", name, v, "s")
    res.write()


def _predict_times(spark, models, Xte, D, args):
    """(transform s, load_model predict_topk s, the rows): the test rows repeated to
    --predict-rows, scored by the replicated Parabel model (or the level-wise one)."""
    import scipy.sparse as sp
    from pyspark.sql import functions as F

    import sparkxml_kernels

    reps = -(-args.predict_rows // args.test)
    big = sp.vstack([Xte] * reps).tocsr()[:args.predict_rows]
    model = models.get("Parabel replicated") or models["Parabel distributed"]
    models.clear()
    df = frame(spark, (big.indptr.astype(np.int64), big.indices.astype(np.int32),
                       big.data.astype(np.float32)),
               (np.zeros(big.shape[0] + 1, np.int64), np.zeros(0, np.int32)), D, 0,
               big.shape[0]).repartition(args.workers).cache()
    df.count()
    t0 = time.perf_counter()
    model.transform(df).agg(F.sum(F.size("prediction"))).collect()
    transform_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "parabel")
        model.save(path)
        # at 500k rows a model is several GB: the driver holds one copy at a time
        del model
        gc.collect()
        served = sparkxml_kernels.load_model(path)
        t0 = time.perf_counter()
        served.predict_topk(big, 5)
        load_s = time.perf_counter() - t0
        del served
    return transform_s, load_s, big


def _omikuji(X, Y, n, D, L, Xte, Yte, rows, res, big, trees, scale):
    """omikuji's fit and P@k (2 threads, defaults but ``trees`` trees), and its row-by-row
    prediction of ``big``."""
    import omikuji

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "train.txt")
        write_xc(path, X, Y, 0, n, D, L)
        t0 = time.perf_counter()
        hp = omikuji.Model.default_hyper_param()
        hp.n_trees = trees
        om = omikuji.Model.train_on_data(path, hp, n_threads=2)
        fit = time.perf_counter() - t0
    pred = [[lab for lab, _ in om.predict(list(zip(Xte.getrow(i).indices.tolist(),
                                                      Xte.getrow(i).data.tolist())), top_k=5)]
            for i in range(Xte.shape[0])]
    p = precision_at(pred, Yte)
    rows["omikuji"] = (p, fit, "defaults, 2 threads")
    res.add("omikuji" + scale, "fit", fit, "s")
    for k in (1, 3, 5):
        res.add("omikuji" + scale, f"P@{k}", p[k], "%")
    if big is None:
        return
    t0 = time.perf_counter()
    for i in range(big.shape[0]):
        row = big.getrow(i)
        om.predict(list(zip(row.indices.tolist(), row.data.tolist())), top_k=5)
    om_pred = time.perf_counter() - t0
    res.add(f"predict {big.shape[0]} rows", "omikuji predict", om_pred, "s")
    print(f"omikuji predicts {big.shape[0]} rows one by one in {om_pred:.1f} s")


if __name__ == "__main__":
    main()
