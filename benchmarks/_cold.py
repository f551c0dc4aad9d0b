"""Cold start (``--cold`` of fastxml_bibtex.py and gbt_synthetic.py): the first fit in a fresh
environment beside a warm one, every fit in a new process (a new Spark application).

A "fresh environment" here is a new copy of the sparkxml and sparkxml_kernels sources (new
path, new mtimes, no numba cache: what ``pip install`` leaves, without our build hook), put
first on PYTHONPATH of a new process and of its Spark Python workers; the interpreter and the
third-party packages are this venv's. Measured in one run, each in a new process:

  (a0) fresh copy, empty cache: the first fit compiles every kernel it uses;
  install: ``python -m sparkxml_kernels.precompile`` on a second fresh copy (what the build
       hook of ``pip install .`` runs; the install's other costs are not in it);
  (a)  that precompiled copy: first fit;
  (b)  the same copy again (cache filled by (a) too): first fit of a new process = warm env;
  (c)  second fit in the process of (b).

The bar is (a) / (b) <= 2; (a0) / (b) and (a) / (c) are printed beside it. The child
processes print where their driver and Python workers imported sparkxml_kernels from and the
cache directory they used, so the copy is proven to be what ran.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from _harness import Results, load_average, session

HERE = os.path.dirname(os.path.abspath(__file__))


def _copy_sources(dst: str) -> None:
    import sparkxml
    import sparkxml_kernels

    for mod in (sparkxml, sparkxml_kernels):
        src = os.path.dirname(os.path.realpath(mod.__file__))
        shutil.copytree(src, os.path.join(dst, mod.__name__), copy_function=shutil.copyfile,
                        ignore=shutil.ignore_patterns("__pycache__", "_numba_cache"))


def _env(root: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARKXML_NUMBA_CACHE_DIR", "NUMBA_CACHE_DIR")}
    env["PYTHONPATH"] = root
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    return env


def _child(root: str, kind: str, data: str, fits: int) -> dict:
    out = subprocess.run([sys.executable, os.path.join(HERE, "_cold.py"), kind, data,
                          str(fits)], env=_env(root), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"cold child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(kind: str, data: str) -> None:
    """Print the cold-start table of ``kind`` ("fastxml": Bibtex in ``data``; "gbt": the
    LightGBM binary sample in ``data``)."""
    res = Results({"fastxml": "fastxml_bibtex_cold", "gbt": "gbt_synthetic_cold"}[kind])
    tmp = tempfile.mkdtemp(prefix="sparkxml-cold-")
    try:
        fresh, installed = os.path.join(tmp, "fresh"), os.path.join(tmp, "installed")
        _copy_sources(fresh)
        _copy_sources(installed)
        l0 = res.check.load_before
        a0 = _child(fresh, kind, data, 2)
        t = time.perf_counter()
        pc = subprocess.run([sys.executable, "-m", "sparkxml_kernels.precompile", "--quiet",
                             "--jobs", str(os.cpu_count() or 1)], env=_env(installed),
                            capture_output=True, text=True)
        install = time.perf_counter() - t
        if pc.returncode != 0:
            raise RuntimeError(f"precompile failed:\n{pc.stdout}\n{pc.stderr}")
        a = _child(installed, kind, data, 1)
        b = _child(installed, kind, data, 2)
        l1 = load_average()[0]
        n_files = sum(len(f) for _, _, f in os.walk(os.path.join(installed, "sparkxml_kernels",
                                                                 "_numba_cache")))
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in
                   os.walk(os.path.join(installed, "sparkxml_kernels", "_numba_cache"))
                   for f in fs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    name = {"fastxml": "FastXML on Bibtex (50 trees, numWorkers=2, local[2])",
            "gbt": "GBTClassifier on lightgbm_binary (100 trees, depth 6, local[2])"}[kind]
    print(f"\n=== cold start: {name}; load average {l0:.1f} -> {l1:.1f} ===")
    for k, r in (("a0", a0), ("a", a), ("b", b)):
        print(f"({k}) sparkxml_kernels, cache and kernels loaded/compiled: {r['where']}")
    print(f"install-time precompile: {install:.1f} s ({pc.stdout.strip()}); cache "
          f"{n_files} files, {size / 2**20:.1f} MiB")
    print("| environment | process | fit s | predict s | metric |")
    print("|---|---|---|---|---|")
    rows = [("(a0) fresh, no precompile", "new, 1st fit", a0["fits"][0], a0["predicts"][0],
             a0["metric"]),
            ("(a) fresh, precompiled at install", "new, 1st fit", a["fits"][0],
             a["predicts"][0], a["metric"]),
            ("(b) warm (cache filled)", "new, 1st fit", b["fits"][0], b["predicts"][0],
             b["metric"]),
            ("(c) warm", "same as (b), 2nd fit", b["fits"][1], b["predicts"][1], b["metric"]),
            ("(a0') fresh, no precompile", "same as (a0), 2nd fit", a0["fits"][1],
             a0["predicts"][1], a0["metric"])]
    for label, proc, f, p, m in rows:
        print(f"| {label} | {proc} | {f:.2f} | {p:.2f} | {m} |")
        res.add(f"{label}, {proc}", "fit", f, "s", note=m)
        res.add(f"{label}, {proc}", "predict", p, "s")
    res.add("install-time precompile", "time", install, "s")
    fa, fa0, fb, fc = a["fits"][0], a0["fits"][0], b["fits"][0], b["fits"][1]
    print(f"\n(a)/(b) = {fa / fb:.2f} (target <= 2); (a0)/(b) = {fa0 / fb:.2f}; "
          f"(a)/(c) = {fa / fc:.2f}; (a0)/(c) = {fa0 / fc:.2f}")
    print(f"fit+predict: (a)/(b) = {(fa + a['predicts'][0]) / (fb + b['predicts'][0]):.2f}, "
          f"(a0)/(b) = {(fa0 + a0['predicts'][0]) / (fb + b['predicts'][0]):.2f}")
    res.add("(a) / (b): fresh precompiled / warm, first fit", "fit ratio", fa / fb, "x",
            note="target <= 2")
    res.add("(a0) / (b): fresh without precompile / warm, first fit", "fit ratio", fa0 / fb,
            "x")
    res.write()


# ------------------------------------------------------------------ child process
def _where(spark) -> str:
    import sparkxml_kernels
    from sparkxml_kernels import _jit

    def probe(it):
        import pandas as pd

        import sparkxml_kernels as K
        from sparkxml_kernels import _jit as J

        for _ in it:
            pass
        # this worker's kernels so far (Python workers are reused: those that ran the fit)
        hit = sum(sum(d.stats.cache_hits.values()) for d in J.KERNELS)
        miss = sum(sum(d.stats.cache_misses.values()) for d in J.KERNELS)
        yield pd.DataFrame({"w": [f"{os.path.dirname(K.__file__)} cache {J.cache_dir()} "
                                  f"(pid {os.getpid()}: {hit} loaded, {miss} compiled)"]})

    workers = {r[0] for r in spark.range(2).repartition(2).mapInPandas(probe, "w string")
               .collect()}
    hit = sum(sum(d.stats.cache_hits.values()) for d in _jit.KERNELS)
    miss = sum(sum(d.stats.cache_misses.values()) for d in _jit.KERNELS)
    return (f"driver {os.path.dirname(sparkxml_kernels.__file__)} cache {_jit.cache_dir()} "
            f"({hit} loaded, {miss} compiled) / workers " + "; ".join(sorted(workers)))


def _fastxml(spark, data, fits):
    import numpy as np

    from sparkxml import FastXML
    from sparkxml.datasets import read_xc

    train = read_xc(spark, os.path.join(data, "bibtex_train.txt")).cache()
    test = read_xc(spark, os.path.join(data, "bibtex_test.txt")).cache()
    train.count(), test.count()
    out = {"fits": [], "predicts": []}
    for _ in range(fits):
        t = time.perf_counter()
        model = FastXML(numWorkers=2, rowOrder="input").fit(train)
        out["fits"].append(time.perf_counter() - t)
        t = time.perf_counter()
        rows = model.transform(test).select("prediction", "labels").collect()
        out["predicts"].append(time.perf_counter() - t)
    p1 = np.mean([len(r[0]) > 0 and r[0][0] in set(r[1]) for r in rows])
    out["metric"] = f"P@1 {100 * p1:.2f}"
    return out


def _gbt(spark, data, fits):
    import numpy as np
    import pandas as pd
    from pyspark.ml.feature import VectorAssembler

    from sparkxml import GBTClassifier

    def frame(path):
        a = np.loadtxt(path)
        cols = [f"f{j}" for j in range(1, a.shape[1])]
        pdf = pd.DataFrame(a[:, 1:], columns=cols)
        pdf["label"] = a[:, 0]
        return VectorAssembler(inputCols=cols, outputCol="features").transform(
            spark.createDataFrame(pdf)).select("features", "label").cache()

    train, test = frame(os.path.join(data, "binary.train")), frame(os.path.join(data,
                                                                               "binary.test"))
    train.count(), test.count()
    out = {"fits": [], "predicts": []}
    for _ in range(fits):
        t = time.perf_counter()
        model = GBTClassifier(maxIter=100, maxDepth=6, stepSize=0.1, maxBins=256).fit(train)
        out["fits"].append(time.perf_counter() - t)
        t = time.perf_counter()
        rows = model.transform(test).select("probability", "label").collect()
        out["predicts"].append(time.perf_counter() - t)
    p = np.array([r[0][1] for r in rows])
    y = np.array([r[1] for r in rows])
    pos, neg = p[y == 1], p[y == 0]
    auc = (np.sum(pos[:, None] > neg[None, :]) + 0.5 * np.sum(pos[:, None] == neg[None, :])) \
        / (len(pos) * len(neg))
    out["metric"] = f"test AUC {auc:.4f}"
    return out


def _child_main(kind, data, fits):
    spark = session(master="local[2]", app=f"sparkxml-cold-{kind}")
    try:
        out = (_fastxml if kind == "fastxml" else _gbt)(spark, data, fits)
        out["where"] = _where(spark)
    finally:
        spark.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    _child_main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
