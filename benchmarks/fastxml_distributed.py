"""FastXML on Delicious-size data when one task cannot hold the training set: trainingMode
"auto" under ``spark.executor.pyspark.memory`` set to half of what replication needs, beside
the replicated fit without a cap, in one run.

    .venv/bin/python benchmarks/fastxml_distributed.py [--train 16105] [--test 3185]
        [--trees 50] [--workers 2] [--pfastrexml]

Delicious (XC repository) is not in ../shared/data, so the data is generated with its shape
(500 features, 983 labels, ~19 labels and ~18 non-zero features a row) by a topic model
(:func:`delicious_like`): tags drawn from a few topics a row, each topic with its own
power-law tag and word distributions over a global power-law popularity, and tf-idf row
features (L2-normalised). The figures: P@1/3/5 on the test rows, fit seconds (wall clock,
after a 2-tree warm-up fit in the same session that loads the numba cache), and the peak RSS
of every training task (``VmHWM``, reset at the task's start where the kernel allows it).

The cap: the replicated fit reports what one task holding the whole training set needs
(``_training_info["replicated_task_bytes"]``, the estimator's own estimate); the capped
session then sets ``spark.executor.pyspark.memory`` to the Python worker's fixed address space
(``_fastxml_fit.WORKER_OVERHEAD_BYTES``) plus HALF of that need, which Spark enforces as the
worker's RLIMIT_AS (read back inside a task and printed). "auto" must choose "distributed"
there; forced replication fails early with the figures (shown).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results, load_average, session  # noqa: E402


def delicious_like(n_rows: int, n_features: int = 500, n_labels: int = 983, seed: int = 0,
                   n_topics: int = 60, labels_mean: float = 19.0, words_mean: float = 18.0):
    """(X CSR, Y CSR) with Delicious's shape and a topic structure (see the module doc).

    Returns
    -------
    X : (indptr int64 (n+1,), indices int32, data float32), tf-idf rows of L2 norm 1
    Y : (indptr int64 (n+1,), labels int32), distinct and sorted within a row
    """
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, n_labels + 1) ** 0.9  # global tag popularity, head and tail
    pop = pop[rng.permutation(n_labels)]
    wpop = 1.0 / np.arange(1, n_features + 1) ** 1.0
    wpop = wpop[rng.permutation(n_features)]
    tag_dist, word_dist = [], []
    for _ in range(n_topics):
        t = pop * rng.gamma(0.15, 1.0, n_labels)  # a topic favours a sparse set of tags
        tag_dist.append(t / t.sum())
        w = wpop * rng.gamma(0.2, 1.0, n_features)
        word_dist.append(w / w.sum())
    tag_dist, word_dist = np.array(tag_dist), np.array(word_dist)
    bg_tag, bg_word = pop / pop.sum(), wpop / wpop.sum()
    x_ptr, x_idx, x_val, y_ptr, y_idx = [0], [], [], [0], []
    for _ in range(n_rows):
        k = rng.integers(1, 4)
        topics = rng.choice(n_topics, k, replace=False)
        mix = rng.dirichlet(np.full(k, 1.0))
        p_tag = 0.8 * (mix @ tag_dist[topics]) + 0.2 * bg_tag
        n_tag = int(np.clip(rng.negative_binomial(4, 4 / (4 + labels_mean - 1)) + 1, 1,
                            n_labels))
        labels = np.sort(rng.choice(n_labels, n_tag, replace=False, p=p_tag))
        p_word = 0.75 * (mix @ word_dist[topics]) + 0.25 * bg_word
        words = rng.choice(n_features, max(1, rng.poisson(words_mean * 1.3)), p=p_word)
        f, tf = np.unique(words, return_counts=True)
        x_idx.append(f)
        x_val.append(np.log1p(tf))
        x_ptr.append(x_ptr[-1] + len(f))
        y_idx.append(labels)
        y_ptr.append(y_ptr[-1] + len(labels))
    xj = np.concatenate(x_idx).astype(np.int32)
    xv = np.concatenate(x_val)
    df = np.bincount(xj, minlength=n_features)
    xv = xv * np.log((1 + n_rows) / (1 + df[xj]))  # idf
    xi = np.asarray(x_ptr, np.int64)
    norms = np.sqrt(np.add.reduceat(xv * xv, xi[:-1])) if len(xv) else np.zeros(0)
    xv = (xv / np.repeat(np.maximum(norms, 1e-12), np.diff(xi))).astype(np.float32)
    Y = (np.asarray(y_ptr, np.int64), np.concatenate(y_idx).astype(np.int32))
    return (xi, xj, xv), Y


def worker_status(spark, n: int = 2) -> list:
    """[(RLIMIT_AS, VmPeak, VmSize, VmHWM) in bytes] of the Python workers that run ``n``
    small tasks (Spark reuses workers, so after a fit these are mostly the fit's workers)."""
    def probe(batches):
        import resource

        import pyarrow as pa

        for _ in batches:
            pass
        vm = {}
        with open("/proc/self/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmPeak", "VmSize", "VmHWM"):
                    vm[key] = int(rest.split()[0]) * 1024
        yield pa.RecordBatch.from_pydict({
            "limit": [int(resource.getrlimit(resource.RLIMIT_AS)[0])],
            "peak": [vm.get("VmPeak", -1)], "size": [vm.get("VmSize", -1)],
            "hwm": [vm.get("VmHWM", -1)]})

    rows = spark.range(0, n, 1, n).mapInArrow(
        probe, "limit long, peak long, size long, hwm long").collect()
    return [tuple(int(v) for v in r) for r in rows]


def precision(model, X, Y, start, stop):
    """P@1/3/5 (%) on rows [start, stop), predicted on the driver with the model's own
    predictor: the capped session's Python workers cannot unpickle a transform closure that
    carries the forest (issue 14's serving half moves the model out of the closure)."""
    from fastxml_bibtex import precision_at

    from sparkxml.synthetic import csr_rows

    (xi, xj, xv), Yte = csr_rows(X, Y, start, stop)
    labels, _ = model.predictor.predict(xi, xj, xv, k=5)
    return precision_at([row.tolist() for row in labels], Yte)


def peaks(info):
    """{stage: [peak RSS MiB of each task]} from a model's training info."""
    mib = (lambda xs: [round(x["peak_rss_bytes"] / 2**20) for x in xs])
    if info["mode"] == "replicated":
        return {"tasks": mib(info["tasks"])}
    return {"stage 1 (shards)": mib(info["stage1"]), "stage 2 (subtrees)": mib(info["stage2"])}


def frame(spark, X, Y, n_features, start, stop):
    from sparkxml.datasets import from_csr
    from sparkxml.synthetic import csr_rows

    (xi, xj, xv), y = csr_rows(X, Y, start, stop)
    return from_csr(spark, xi, xj, xv, n_features, labels=y)


def run(mode, conf, X, Y, n_train, n_features, args, est_cls):
    spark = session(master=f"local[{args.workers}]", app=f"fastxml-distributed-{mode}",
                    conf=conf, log_level=None)
    try:
        limit = worker_status(spark, 1)[0][0]
        train = frame(spark, X, Y, n_features, 0, n_train).repartition(args.workers).cache()
        train.count()
        kw = dict(numWorkers=args.workers, seed=0, trainingMode=mode)
        est_cls(numTrees=2, **kw).fit(train)  # warm-up: numba cache, Spark plans
        refused = None
        if conf:
            try:
                est_cls(numTrees=2, numWorkers=args.workers, trainingMode="replicated").fit(train)
            except MemoryError as e:
                refused = str(e)
        t0 = time.perf_counter()
        model = est_cls(numTrees=args.trees, **kw).fit(train)
        fit_s = time.perf_counter() - t0
        print(f"{mode} fit ({'capped' if conf else 'no cap'}): {fit_s:.1f} s, mode "
              f"{model._training_info['mode']}", flush=True)
        vm = worker_status(spark, args.workers)
        print("  workers after the fit (MiB): " + "; ".join(
            f"VmPeak {p >> 20}, VmSize {z >> 20}, VmHWM {h >> 20}" for _, p, z, h in vm),
            flush=True)
    finally:
        spark.stop()
    p = precision(model, X, Y, n_train, len(X[0]) - 1)
    return dict(info=model._training_info, fit=fit_s, p=p, limit=limit, refused=refused, vm=vm)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=16105)
    ap.add_argument("--test", type=int, default=3185)
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pfastrexml", action="store_true")
    args = ap.parse_args()
    res = Results("fastxml_distributed")
    # Spark enforces spark.executor.pyspark.memory as RLIMIT_AS, which counts address space
    # reserved but never touched; glibc reserves 64 MiB of it per thread arena (up to 8 per
    # core). Two arenas keep the workers' reserve near their use (on a cluster:
    # spark.executorEnv.MALLOC_ARENA_MAX=2); both sessions run with it.
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    from sparkxml import FastXML, PfastreXML
    from sparkxml.fastxml.fit import WORKER_OVERHEAD_BYTES

    est_cls = PfastreXML if args.pfastrexml else FastXML
    t0 = time.perf_counter()
    X, Y = delicious_like(args.train + args.test)
    gen_s = time.perf_counter() - t0
    n_train = args.train
    nnz_x, nnz_y = int(X[0][n_train]), int(Y[0][n_train])
    print(f"data: {n_train} train / {args.test} test rows, 500 features, 983 labels; train "
          f"non-zeros {nnz_x} ({nnz_x / n_train:.1f} a row), labels {nnz_y} "
          f"({nnz_y / n_train:.1f} a row), labels seen in train "
          f"{len(np.unique(Y[1][:nnz_y]))}; generated in {gen_s:.1f} s", flush=True)

    rep = run("replicated", {}, X, Y, n_train, 500, args, est_cls)
    need = rep["info"]["replicated_task_bytes"]
    # Spark reads the setting in whole MiB: half the need, rounded up to a MiB
    cap_mib = (WORKER_OVERHEAD_BYTES >> 20) + -(-need // 2 // 2**20)
    print(f"replicated: {rep['fit']:.1f} s; estimated need of a replicated task {need / 2**20:.1f}"
          f" MiB; cap = worker overhead {WORKER_OVERHEAD_BYTES >> 20} MiB + half of it = "
          f"{cap_mib} MiB", flush=True)
    dis = run("auto", {"spark.executor.pyspark.memory": f"{cap_mib}m"}, X, Y, n_train, 500,
              args, est_cls)
    info = dis["info"]
    print(f"capped session: worker RLIMIT_AS {dis['limit'] / 2**20:.0f} MiB; auto chose "
          f"'{info['mode']}' (data budget a task {info['task_memory_bytes'] / 2**20:.1f} MiB = "
          f"{info['task_memory_bytes'] / need:.2f} of the replicated need, "
          f"threshold {info.get('threshold_rows')} rows, lanes {info.get('lanes')}, frontier "
          f"nodes {info.get('frontier_nodes')}, mean top nodes a tree "
          f"{np.mean(info.get('top_nodes_per_tree', [0])):.1f}, stage-1 rounds "
          f"{[s['rounds'] for s in info.get('stage1', [])]})")
    print(f"forced replication under the cap: {dis['refused']}")
    load = load_average()
    name = est_cls.__name__
    print(f"\n{name}, {args.trees} trees, numWorkers={args.workers}, local[{args.workers}]; "
          f"load average {load[0]:.1f} / {load[1]:.1f} at the end\n")
    print("| fit | spark.executor.pyspark.memory | mode | P@1/3/5 (%) | fit s | "
          "peak RSS a task (MiB) | workers' VmPeak (MiB) |")
    print("|---|---|---|---|---|---|---|")
    for label, r, c in (("replicated", rep, "unset"), ("auto, capped", dis, f"{cap_mib}m")):
        p = "/".join(f"{r['p'][k]:.2f}" for k in (1, 3, 5))
        pk = "; ".join(f"{k}: {v}" for k, v in peaks(r["info"]).items())
        vp = ", ".join(str(v[1] >> 20) for v in r["vm"])
        print(f"| {label} | {c} | {r['info']['mode']} | {p} | {r['fit']:.1f} | {pk} | {vp} |")
        case = f"{name} {label} (spark.executor.pyspark.memory {c})"
        res.add(case, "fit", r["fit"], "s", note=f"mode {r['info']['mode']}")
        for k in (1, 3, 5):
            res.add(case, f"P@{k}", r["p"][k], "%")
        res.add(case, "peak RSS of a task",
                max((x for v in peaks(r["info"]).values() for x in v), default=None), "MiB")
    diff = {k: dis["p"][k] - rep["p"][k] for k in (1, 3, 5)}
    print("\nP@k difference (capped - replicated), points: "
          + ", ".join(f"P@{k} {v:+.2f}" for k, v in diff.items())
          + f"; fit time ratio {dis['fit'] / rep['fit']:.2f}")
    ok = info["mode"] == "distributed" and all(abs(v) <= 1.0 for v in diff.values())
    print("must-show (auto chose distributed, |dP@k| <= 1 point):", "MET" if ok else "MISSED")
    res.add(f"{name} auto capped / replicated", "fit ratio", dis["fit"] / rep["fit"], "x",
            note=f"auto chose {info['mode']}; must-show {'MET' if ok else 'MISSED'}")
    res.write()


if __name__ == "__main__":
    main()
