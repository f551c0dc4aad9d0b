"""FastXML transform of a model of >= 300 MB over Spark Connect, with a SEPARATE server
(pyspark's ``sbin/start-connect-server.sh``, ``local[2]``): the plan's size with the forest in
the task closure (as before) and with a ``ModelHandle`` (the executors read the saved
directory), and how often each Python worker loads the model. All in one run.

    .venv/bin/python benchmarks/model_serving.py [--target-mb 320] [--rows 1000]
        [--server-memory 4g] [--skip-inline-run] [--only formats|classic|connect]

Three parts, each in a process of its own: ``formats`` (below), ``classic`` (the transform
time in a classic ``local[2]`` session, the model read from its directory by the tasks
against the model carried in the task closure, alternating, the same rows collected), and
``connect``:

The model: a FastXML forest trained by the kernel on generated data with wide leaves (maxLeaf
100, labelsPerLeaf 1000), its trees repeated until the arrays reach ``--target-mb``, every
float of a copy changed by at most 2**-16 (relative) so that the model does not compress
better than a trained one (a forest of exact copies would predict what the trained trees
predict; the run reports how close the perturbed one is).
It is saved (pyarrow, local path), loaded over Connect (the server reads it through Spark),
then transformed twice with the default settings: the executors read the saved directory.
Every model load in a Python worker appends a line to a load log
(``spark.sparkxml.modelLoadLog``): the run reports loads per worker process and how many
decoded the parquet data (node-cache misses) rather than mapping the decoded copy. The same
model is then saved over Connect (through the server's DataFrame writers). Last, the same
transform with ``spark.sparkxml.inlineModelBytes`` above the model's size puts the forest in
the closure: its plan is measured and, unless ``--skip-inline-run``, executed (given
``--inline-timeout`` seconds; the server's log is searched for an OutOfMemoryError).

``--only formats`` (run first by default, in its own process) measures what the on-disk format
and its two transports cost, for the trained 4-tree model (about 1 MiB) and the large one:
this format (parquet chunk rows) saved and loaded through pyarrow and through Spark
(``file://``, a classic ``local[2]`` session), the previous format (one ``arrays.npz``), one
``.npy`` file per array (memory-mappable as it is), and what an executor pays to load a
model from its directory: decode it into the node cache (the first worker of a node) or map
the decoded copy (every other worker). Times are wall-clock seconds (best of ``--repeats``);
the machine's load average is printed.
"""
import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
from _harness import Results, best_of, load_average, session

HERE = os.path.dirname(os.path.abspath(__file__))


def tile_forest(forest: dict, copies: int) -> dict:
    """``copies`` repetitions of every tree of ``forest`` (tree-local child ids and CSR
    pointers stay valid once shifted)."""
    T = len(forest["tree_ids"])
    M = forest["children"].reshape(-1, 2).shape[0]
    out = {"tree_ids": np.arange(T * copies, dtype=forest["tree_ids"].dtype),
           "children": np.tile(forest["children"].reshape(-1, 2), (copies, 1))}
    off = forest["tree_offsets"]
    out["tree_offsets"] = np.concatenate([off[:-1] + c * M for c in range(copies)]
                                         + [[off[-1] * copies]]).astype(off.dtype)
    for ptr, cols in (("w_indptr", ("w_index", "w_value")),
                      ("leaf_indptr", ("leaf_label", "leaf_score"))):
        p = forest[ptr]
        out[ptr] = np.concatenate([p[:-1] + c * p[-1] for c in range(copies)]
                                  + [[p[-1] * copies]]).astype(p.dtype)
        for col in cols:
            out[col] = np.tile(forest[col], copies)
    return out


def build_model(target_mb: float):
    from sparkxml.fastxml.fastxml import FastXMLModel
    from sparkxml.synthetic import csr_rows, make_multilabel
    from sparkxml_kernels.fastxml.forest import train_forest

    n_features, n_labels = 5000, 20000
    X, Y = make_multilabel(n_rows=6000, n_features=n_features, n_labels=n_labels, seed=11,
                           topic_size=40)
    (xi, xj, xv), (yi, yj) = csr_rows(X, Y, 0, 5000)
    base = train_forest(xi, xj, xv, yi, yj, n_features, n_labels, np.arange(4, dtype=np.int32),
                        max_leaf=100, labels_per_leaf=1000)
    base_model = FastXMLModel._create(base, n_features, n_labels, 1.0)
    per_copy = sum(a.nbytes for a in base.values())
    copies = max(1, int(np.ceil(target_mb * 2**20 / per_copy)))
    tiled = tile_forest(base, copies)
    # exact copies compress about 75x (zstd on disk, Spark Connect's plan compression): a
    # relative change of at most 2**-16 in every separator weight and leaf score makes the
    # floats incompressible; points near a separator may then take the other branch in some
    # copies, so the predictions are close to, not equal to, the trained trees' (reported)
    rng = np.random.default_rng(0)
    for key in ("w_value", "leaf_score"):
        a = tiled[key]
        a *= (1 + rng.uniform(-2**-16, 2**-16, a.size)).astype(a.dtype)
    model = FastXMLModel._create(tiled, n_features, n_labels, 1.0)
    return model, base_model, (X, Y, n_features), copies


class ConnectServer:
    """pyspark's sbin/start-connect-server.sh on a free port; stop-connect-server.sh at exit."""

    def __init__(self, workdir: str, memory: str):
        import pyspark

        self.home = os.path.dirname(pyspark.__file__)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.dir = workdir
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_HOME")}
        self.env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOG_DIR=f"{workdir}/logs",
                        SPARK_PID_DIR=f"{workdir}/pid",
                        SPARK_IDENT_STRING=f"sparkxml-bench-{self.port}")
        self.memory = memory

    def __enter__(self):
        subprocess.run([f"{self.home}/sbin/start-connect-server.sh", "--master", "local[2]",
                        "--driver-memory", self.memory,
                        "--conf", f"spark.connect.grpc.binding.port={self.port}",
                        "--conf", "spark.ui.enabled=false"],
                       cwd=self.dir, env=self.env, check=True, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return f"sc://127.0.0.1:{self.port}"
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the Connect server did not start: see "
                                       f"{self.dir}/logs") from None
                time.sleep(1)

    def __exit__(self, *exc):
        subprocess.run([f"{self.home}/sbin/stop-connect-server.sh"], cwd=self.dir,
                       env=self.env, stdout=subprocess.DEVNULL)
        return False


def format_costs(models: dict, work: str, repeats: int) -> list:
    """Rows (model, operation, seconds, MiB on disk) for every format and transport."""
    import io

    from sparkxml._core import storage as _storage
    from sparkxml.fastxml.fastxml import FastXMLModel
    from sparkxml_kernels import model_cache, persist
    from sparkxml_kernels.model_cache import ModelHandle

    spark = session("local[2]", app="model-serving-formats",
                    conf={"spark.driver.memory": "3g"})
    rows = []

    def size(p):
        return sum(os.path.getsize(f) for f in glob.glob(f"{p}/**/*", recursive=True)
                   if os.path.isfile(f) and not os.path.basename(f).startswith(".")) / 2**20

    for label, model in models.items():
        arrays = model._arrays
        d = os.path.join(work, label)
        plain, uri = f"{d}/plain", f"file://{d}/uri"
        save = best_of(lambda: model.write().overwrite().save(plain), repeats)
        rows.append((label, "this format, pyarrow (plain path): save", save, size(plain)))
        rows.append((label, "this format, pyarrow (plain path): load the arrays",
                     best_of(lambda: persist.load_arrays(plain), repeats), None))
        save = best_of(lambda: model.write().overwrite().save(uri), repeats)
        rows.append((label, "this format, Spark (file:// URI): save", save, size(f"{d}/uri")))
        rows.append((label, "this format, Spark (file:// URI): load the arrays",
                     best_of(lambda: _storage.load(spark, uri, None, model_kind="fastxml"),
                           repeats), None))
        npz = f"{d}/arrays.npz"

        def save_npz():
            buf = io.BytesIO()
            np.savez(buf, **arrays)
            with open(npz, "wb") as f:
                f.write(buf.getvalue())

        def load_npz():
            with open(npz, "rb") as f, np.load(io.BytesIO(f.read())) as z:
                return {k: z[k] for k in z.files}

        rows.append((label, "formatVersion 1 (arrays.npz): save", best_of(save_npz, repeats),
                     os.path.getsize(npz) / 2**20))
        rows.append((label, "formatVersion 1 (arrays.npz): load the arrays",
                     best_of(load_npz, repeats),
                     None))
        npy = f"{d}/npy"
        os.makedirs(npy, exist_ok=True)

        def save_npy():
            for i, a in enumerate(arrays.values()):
                np.save(f"{npy}/{i}.npy", a)

        rows.append((label, "one .npy per array: save", best_of(save_npy, repeats), size(npy)))
        rows.append((label, "one .npy per array: map", best_of(
            lambda: [np.load(f"{npy}/{i}.npy", mmap_mode="c") for i in range(len(arrays))],
            repeats), None))
        save_id = FastXMLModel.load(plain)._stored.save_id
        cache = f"{d}/node-cache"

        def decode():
            shutil.rmtree(cache, ignore_errors=True)
            os.environ["SPARKXML_MODEL_CACHE_DIR"] = cache
            model_cache.clear()
            ModelHandle(source=plain, save_id=save_id).arrays()

        def mapped():
            model_cache.clear()
            ModelHandle(source=plain, save_id=save_id).arrays()

        rows.append((label, "executor, first worker of a node: decode into the node cache",
                     best_of(decode, repeats), None))
        rows.append((label, "executor, any other worker: map the decoded copy",
                     best_of(mapped, repeats), None))
        model_cache.clear()
        print(f"{label}: done", flush=True)
    spark.stop()
    return rows


def run_formats(args, work, rec):
    model, base_model, _, _ = build_model(args.target_mb)
    big = f"{sum(a.nbytes for a in model._arrays.values()) / 2**20:.0f} MiB"
    small = f"{sum(a.nbytes for a in base_model._arrays.values()) / 2**20:.2f} MiB"
    rows = format_costs({small: base_model, big: model}, work, args.repeats)
    print(f"\nload average {load_average()}")
    print("\n| model | operation | seconds | MiB on disk |\n|---|---|---|---|")
    for label, op, sec, mb in rows:
        print(f"| {label} | {op} | {sec:.3f} | {'' if mb is None else f'{mb:.1f}'} |")
        rec.add(f"formats, {label} model: {op}", "time (best)", sec, "s",
                note=f"best of {args.repeats}")
        if mb is not None:
            rec.add(f"formats, {label} model: {op}", "on disk", mb, "MiB")


def run_classic(args, work, rec):
    """Transform time in a classic ``local[2]`` session: the model read from its directory
    by the tasks against the model in the task closure (PySpark broadcasts a large pickled
    closure; every Python worker unpickles it), the same rows collected, alternating."""
    from sparkxml.datasets import from_csr
    from sparkxml.fastxml.fastxml import FastXMLModel
    from sparkxml.synthetic import csr_rows

    model, base_model, (X, Y, d), _ = build_model(args.target_mb)
    nbytes = sum(a.nbytes for a in model._arrays.values())
    path = os.path.join(work, "fastxml_model")
    model.write().save(path)
    os.environ["SPARKXML_MODEL_CACHE_DIR"] = os.path.join(work, "node-cache")
    spark = session("local[2]", app="model-serving-classic",
                    conf={"spark.driver.memory": args.server_memory})
    log = os.path.join(work, "loads.log")
    spark.conf.set("spark.sparkxml.modelLoadLog", log)
    loaded = FastXMLModel.load(path)
    (ti, tj, tv), _ = csr_rows(X, Y, 6000 - args.rows, 6000)
    test = from_csr(spark, ti, tj, tv, d, numPartitions=4).cache()
    test.count()
    res = {"model_mb": nbytes / 2**20, "load_average": load_average()}
    handle_out = loaded.transform(test)
    spark.conf.set("spark.sparkxml.inlineModelBytes", str(nbytes + 1))
    inline_out = loaded.transform(test)  # the closure is fixed when the plan is built
    spark.conf.unset("spark.sparkxml.inlineModelBytes")
    res["handle_s"], res["inline_s"] = [], []
    got = {}
    for _ in range(args.repeats):  # alternating, so both see the same machine load
        for key, df in (("handle_s", handle_out), ("inline_s", inline_out)):
            t = time.perf_counter()
            got[key] = sorted(map(tuple, df.select("prediction", "scores").collect()))
            res[key].append(time.perf_counter() - t)
    res["same_predictions"] = got["handle_s"] == got["inline_s"]
    loads = [json.loads(line) for line in open(log)]
    res["loads_per_worker_process"] = {}
    for e in loads:
        res["loads_per_worker_process"][e["pid"]] = \
            res["loads_per_worker_process"].get(e["pid"], 0) + 1
    res["node_cache_misses"] = sum(e["node_cache"] == "miss" for e in loads)
    res["load_seconds"] = [e["seconds"] for e in loads]
    spark.stop()
    print(json.dumps(res, indent=1, default=str))
    print(f"\n| {res['model_mb']:.0f} MiB model, classic local[2], {args.rows} rows | "
          f"read from its directory | in the task closure |\n|---|---|---|")
    for i in range(args.repeats):
        print(f"| collect {i + 1} (s) | {res['handle_s'][i]:.1f} | {res['inline_s'][i]:.1f} |")
    case = f"classic local[2], {res['model_mb']:.0f} MiB model, {args.rows} rows"
    rec.add(f"{case}: read from its directory", "collect (best)", min(res["handle_s"]), "s",
            note=f"best of {args.repeats}, alternating")
    rec.add(f"{case}: in the task closure", "collect (best)", min(res["inline_s"]), "s",
            note=f"best of {args.repeats}, alternating")
    rec.write()


def _inline_run(df, timeout: float, server_dir: str) -> str:
    """Collect ``df`` in a daemon thread for at most ``timeout`` seconds (a client whose
    server died keeps retrying); what happened, with the server log's OutOfMemoryError."""
    import threading

    out = {}

    def run():
        t = time.perf_counter()
        try:
            df.select("prediction", "scores").collect()
            out["r"] = f"ok in {time.perf_counter() - t:.1f} s"
        except Exception as e:  # noqa: BLE001 - reported
            text = " ".join(str(e).split())  # gRPC errors say what on their later lines
            out["r"] = (f"failed after {time.perf_counter() - t:.1f} s: {type(e).__name__}: "
                        f"{text[:400]}")

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout)
    result = out.get("r", f"no answer after {timeout:.0f} s")
    oom = [ln.strip() for f in glob.glob(f"{server_dir}/logs/*.out") for ln in open(f)
           if "OutOfMemoryError" in ln]
    if oom:
        result += f"; the server logged {len(oom)} OutOfMemoryError lines: {oom[0][:200]}"
    return result


def plan_bytes(df) -> int:
    return df._plan.to_proto(df.sparkSession.client).ByteSize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target-mb", type=float, default=320)
    ap.add_argument("--rows", type=int, default=1000, help="rows transformed")
    ap.add_argument("--server-memory", default="4g")
    ap.add_argument("--skip-inline-run", action="store_true")
    ap.add_argument("--inline-timeout", type=float, default=600)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["formats", "classic", "connect"], default=None)
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="sparkxml-serving-")
    os.makedirs(work, exist_ok=True)
    if args.only is None:  # each part in a process of its own (classic, then Connect)
        for part in ("formats", "classic", "connect"):
            subprocess.run([sys.executable, __file__, *sys.argv[1:], "--only", part,
                            "--workdir", os.path.join(work, part)], check=True)
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        return
    rec = Results("model_serving")
    if args.only == "formats":
        run_formats(args, work, rec)
        rec.write()
        return
    if args.only == "classic":
        run_classic(args, work, rec)
        return
    res = {"load_average": load_average()}

    from sparkxml.fastxml.fastxml import FastXMLModel
    from sparkxml.synthetic import csr_rows

    t = time.perf_counter()
    model, base_model, (X, Y, d), copies = build_model(args.target_mb)
    nbytes = sum(a.nbytes for a in model._arrays.values())
    res.update(model_mb=nbytes / 2**20, trees=model.trees, tree_copies=copies,
               build_s=time.perf_counter() - t)
    print(f"model: {model.trees} trees ({copies} copies of 4 trained), "
          f"{nbytes / 2**20:.1f} MiB of arrays", flush=True)
    path = os.path.join(work, "fastxml_model")
    t = time.perf_counter()
    model.write().save(path)  # no session yet: pyarrow, a local path
    res["save_local_s"] = time.perf_counter() - t
    res["dir_mb"] = sum(os.path.getsize(f) for f in glob.glob(f"{path}/**/*", recursive=True)
                        if os.path.isfile(f)) / 2**20
    (ti, tj, tv), _ = csr_rows(X, Y, 6000 - args.rows, 6000)
    want = base_model.predictor.predict(ti, tj, tv, 5)
    log = os.path.join(work, "loads.log")
    server_dir = os.path.join(work, "server")
    os.makedirs(server_dir, exist_ok=True)

    with ConnectServer(server_dir, args.server_memory) as url:
        from pyspark.sql import SparkSession

        from sparkxml.datasets import from_csr

        spark = SparkSession.builder.remote(url).getOrCreate()
        spark.conf.set("spark.sparkxml.modelLoadLog", log)
        t = time.perf_counter()
        loaded = FastXMLModel.load(path)
        res["load_over_connect_s"] = time.perf_counter() - t
        test = from_csr(spark, ti, tj, tv, d, columns={"rid": np.arange(len(ti) - 1)},
                        numPartitions=4).cache()
        test.count()

        out = loaded.transform(test)
        res["plan_bytes_input"] = plan_bytes(test)  # the rows themselves travel in the plan
        res["plan_bytes_handle"] = plan_bytes(out)
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            rows = out.select("rid", "prediction", "scores").collect()
            times.append(time.perf_counter() - t)
        res["transform_s"] = times
        got = np.full((len(rows), 5), -1, np.int32)
        got_s = np.zeros((len(rows), 5), np.float64)
        for r in rows:
            got[r["rid"], :len(r[1])] = r[1]
            got_s[r["rid"], :len(r[2])] = r[2]
        res["labels_equal_trained_trees_fraction"] = float(np.mean(
            (got == want[0]).all(axis=1)))
        res["max_score_difference"] = float(np.abs(got_s - want[1]).max())
        loads = [json.loads(line) for line in open(log)]
        res["loads"] = loads
        per_pid = {}
        for e in loads:
            per_pid[e["pid"]] = per_pid.get(e["pid"], 0) + 1
        res["loads_per_worker_process"] = per_pid
        res["node_cache_misses"] = sum(e["node_cache"] == "miss" for e in loads)
        t = time.perf_counter()
        loaded.write().save("saved_over_connect")  # relative: the server's directory
        res["save_over_connect_s"] = time.perf_counter() - t
        print("RESULT-SO-FAR " + json.dumps({k: v for k, v in res.items() if k != "loads"},
                                            default=str), flush=True)

        # last: with the forest in the closure, a server may not survive it
        spark.conf.set("spark.sparkxml.inlineModelBytes", str(nbytes + 1))
        inline = loaded.transform(test)
        t = time.perf_counter()
        try:
            res["plan_bytes_inline"] = plan_bytes(inline)
        except Exception as e:  # noqa: BLE001 - reported
            res["plan_bytes_inline"] = f"{type(e).__name__}: {str(e)[:200]}"
        res["inline_plan_serialise_s"] = time.perf_counter() - t
        if not args.skip_inline_run:
            res["inline_run"] = _inline_run(inline, args.inline_timeout, server_dir)
        else:
            spark.stop()
    print(json.dumps({k: v for k, v in res.items() if k != "loads"}, indent=1, default=str))
    print("\nloads (one line per model load in a Python worker):")
    for e in res["loads"]:
        print("  ", json.dumps(e))
    print("\n| model | plan with the forest in the closure | plan with a ModelHandle | "
          "loads per worker process | node-cache decodes |")
    print("|---|---|---|---|---|")
    inline_b = res["plan_bytes_inline"]
    inline_s = f"{inline_b / 2**20:.1f} MiB" if isinstance(inline_b, int) else inline_b
    print(f"| {res['trees']} trees, {res['model_mb']:.0f} MiB | {inline_s} | "
          f"{res['plan_bytes_handle'] / 1024:.1f} KiB (input rows alone: "
          f"{res['plan_bytes_input'] / 1024:.1f} KiB) | "
          f"{sorted(res['loads_per_worker_process'].values())} | "
          f"{res['node_cache_misses']} |")
    case = f"Spark Connect, {res['trees']} trees, {res['model_mb']:.0f} MiB model"
    if isinstance(inline_b, int):
        rec.add(case, "plan with the forest in the closure", inline_b / 2**20, "MiB")
    rec.add(case, "plan with a ModelHandle", res["plan_bytes_handle"] / 1024, "KiB")
    rec.add(case, "transform + collect (best)", min(res["transform_s"]), "s",
            note=f"{args.rows} rows, best of {args.repeats}")
    rec.add(case, "load over Connect", res["load_over_connect_s"], "s")
    rec.add(case, "node-cache decodes", res["node_cache_misses"], "")
    rec.write()
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.flush()
    os._exit(0)  # a Connect client whose server died keeps non-daemon gRPC threads alive


if __name__ == "__main__":
    main()
