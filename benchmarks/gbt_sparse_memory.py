"""Memory of a GBT worker on a9a-like sparse data (issue 14 must-show: <= 2x the CSR
partition).

a9a-like: binary features (as a9a's one-hot encoded fields), ``--nnz`` distinct ones per row
out of ``--features``, labels from a sparse linear model with noise. The run is ONE GBT
barrier task as Spark runs it, in this process, without the JVM: the task's own functions
(``sparkxml._core.histogram_tasks.make_load_fn`` / ``sparkxml.gbt.tasks.make_train_fn``) consume a stream of Arrow record
batches holding the VectorUDT struct column exactly as ``mapInArrow`` hands a wide vector
column to the task (``sparkxml.gbt.features``: >= 1024 slots ship sparse), bin them into
sparse storage and boost. Bin edges come from a sketch of a separate 100,000-row sample (what
the driver's sketch job does).

Measured: the peak resident memory of the process during load + training minus its resident
memory before (numba kernels compiled by a warm-up run on small data first; peak reset
through /proc/self/clear_refs), against the bytes of the partition as CSR (int64 indptr,
int32 indices, float64 values). A dense uint8 binned matrix would need rows x features bytes.

    python benchmarks/gbt_sparse_memory.py                       # 1M x 100k, 30 a row
    python benchmarks/gbt_sparse_memory.py --rows 200000 --iters 5
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jvm-free-udfs"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sparkxml._core.histogram_tasks import ROW_ID, make_load_fn
from sparkxml.gbt.tasks import make_train_fn  # noqa: E402
from sparkxml_kernels import binning  # noqa: E402
from sparkxml_kernels.collective import LocalCollective  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results, load_average  # noqa: E402


def _rows(rng, n, d, nnz):
    """CSR of n rows with nnz distinct sorted feature ids each (values 1.0)."""
    ids = np.sort(rng.integers(0, d - nnz, size=(n, nnz)), axis=1) + np.arange(nnz)
    indptr = np.arange(0, n * nnz + 1, nnz, dtype=np.int64)
    return indptr, ids.reshape(-1).astype(np.int32), np.ones(n * nnz)


def _labels(rng, indices, n, nnz, w):
    margin = w[indices].reshape(n, nnz).sum(axis=1) + rng.normal(size=n) * 0.5
    return (margin > 0).astype(np.float64)


def _vector_struct(indptr, indices, data, d):
    """Spark ML sparse vectors as the Arrow struct mapInArrow hands to Python."""
    n = indptr.size - 1
    off = pa.array(indptr.astype(np.int32))
    return pa.StructArray.from_arrays(
        [pa.array(np.zeros(n, np.int8)), pa.array(np.full(n, d, np.int32)),
         pa.ListArray.from_arrays(off, pa.array(indices)),
         pa.ListArray.from_arrays(off, pa.array(data))],
        names=["type", "size", "indices", "values"])


def _batches(seed, n, d, nnz, w, batch_rows=65536):
    """The partition as a stream of record batches (generated on the fly: the stream is
    what the task receives, never the whole partition at once)."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, batch_rows):
        m = min(batch_rows, n - start)
        indptr, indices, data = _rows(rng, m, d, nnz)
        y = _labels(rng, indices, m, nnz, w)
        yield pa.RecordBatch.from_arrays(
            [_vector_struct(indptr, indices, data, d), pa.array(y),
             pa.array(np.arange(start, start + m, dtype=np.int64))],
            names=["features", "label", ROW_ID])


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def sketch_edges(n, d, nnz, seed=0):
    """Bin edges from a sketch of a separate sample of at most 100,000 rows (the driver's
    sketch job)."""
    rng = np.random.default_rng(seed + 1000)
    s_ptr, s_idx, s_val = _rows(rng, min(n, 100_000), d, nnz)
    sk = binning.sketch((s_ptr, s_idx, s_val, d), None, 256)
    return binning.edges_from_sketch(sk, 256)


def run_task(edges, n, d, nnz, iters, depth, seed=0):
    """Load + train as one barrier task; memory measured from just before the load."""
    w = np.random.default_rng(seed + 7).normal(size=d)
    spec = {"kind": "vector", "col": "features", "sparse": True}
    load = make_load_fn(spec, "label", None, None, edges, d, options={"missing": np.nan})
    params = dict(maxIter=iters, maxDepth=depth, stepSize=0.3, objective="logistic",
                  numClasses=2, evalMetric=None)
    train = make_train_fn(edges, params, None)
    gc.collect()
    base = _rss()
    _reset_peak()
    t1 = time.perf_counter()
    state = load(_batches(seed, n, d, nnz, w), 0, 1)
    t2 = time.perf_counter()
    binned_bytes = state["X"].nbytes
    arrays, info = train(state, LocalCollective(), 0, 1)
    t3 = time.perf_counter()
    peak = max(_hwm(), _rss())
    return {"base_rss": base, "peak_rss": peak, "worker_bytes": peak - base,
            "binned_bytes": int(binned_bytes), "load_s": t2 - t1, "train_s": t3 - t2,
            "train_logloss": info["history"]["train"][-1] if info["history"]["train"]
            else None}


def _child(edges_path, n, d, nnz, iters, depth):
    """The measured task, in a fresh process (the sketch's freed memory would otherwise hide
    part of the task's): warm-up compile, then one run; prints JSON."""
    z = np.load(edges_path)
    edges = [z[f"e{f}"] for f in range(d)]
    run_task(sketch_edges(2000, 5000, nnz), 2000, 5000, nnz, 2, 3)  # compile/load kernels
    print("RESULT " + json.dumps(run_task(edges, n, d, nnz, iters, depth)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=100_000)
    ap.add_argument("--nnz", type=int, default=30)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return _child(a.child, a.rows, a.features, a.nnz, a.iters, a.depth)
    import subprocess
    import tempfile

    res = Results("gbt_sparse_memory")
    t0 = time.perf_counter()
    edges = sketch_edges(a.rows, a.features, a.nnz)
    sketch_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "edges.npz")
        np.savez(path, **{f"e{f}": e for f, e in enumerate(edges)})
        del edges
        out = subprocess.run([sys.executable, __file__, "--child", path, "--rows", str(a.rows),
                              "--features", str(a.features), "--nnz", str(a.nnz),
                              "--iters", str(a.iters), "--depth", str(a.depth)],
                             check=True, capture_output=True, text=True).stdout
    r = json.loads(out.split("RESULT ", 1)[1])
    r["sketch_s"] = sketch_s
    nnz_total = a.rows * a.nnz
    csr_bytes = 8 * (a.rows + 1) + 4 * nnz_total + 8 * nnz_total
    r.update(rows=a.rows, features=a.features, nnz_per_row=a.nnz, iters=a.iters,
             depth=a.depth, csr_bytes=csr_bytes, ratio=r["worker_bytes"] / csr_bytes,
             dense_uint8_bytes=a.rows * a.features, load_avg=load_average()[0])
    mb = 1 << 20
    print(f"a9a-like {a.rows:,} rows x {a.features:,} features, {a.nnz} non-zeros a row; "
          f"{a.iters} trees of depth {a.depth} (1 worker, load average {r['load_avg']:.1f})")
    print(f"  CSR partition (int64 indptr, int32 indices, float64 values): "
          f"{csr_bytes / mb:,.0f} MiB")
    print(f"  sparse binned matrix: {r['binned_bytes'] / mb:,.0f} MiB "
          f"(dense uint8 would be {r['dense_uint8_bytes'] / mb:,.0f} MiB)")
    print(f"  GBT worker memory (peak RSS - RSS before load): {r['worker_bytes'] / mb:,.0f} MiB "
          f"= {r['ratio']:.2f}x the CSR partition (bar: <= 2x)")
    print(f"  sketch {r['sketch_s']:.1f} s, load+bin {r['load_s']:.1f} s, "
          f"train {r['train_s']:.1f} s, train logloss {r['train_logloss']}")
    case = (f"a9a-like {a.rows} rows x {a.features} features, {a.nnz} a row, {a.iters} trees "
            f"depth {a.depth}, 1 worker")
    res.add(case, "worker memory / CSR partition", r["ratio"], "x", note="bar: <= 2x")
    res.add(case, "worker memory (peak RSS - RSS before load)", r["worker_bytes"] / mb, "MiB")
    res.add(case, "CSR partition", csr_bytes / mb, "MiB")
    res.add(case, "sparse binned matrix", r["binned_bytes"] / mb, "MiB")
    res.add(case, "load+bin", r["load_s"], "s")
    res.add(case, "train", r["train_s"], "s")
    res.write()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)
    return r


if __name__ == "__main__":
    main()
