"""Where a LinearSVC training task's memory goes, without Spark: two processes run the task's
own load and train functions (``sparkxml.linear.tasks``) on the collective, each reading
its rows as Arrow batches from a stream file through a buffered Python file object (as a
pyspark worker reads them from the JVM's socket: every batch is a fresh malloc'd bytes
object), after a 30 MiB free that raises glibc's mmap threshold as earlier tasks do in a
reused worker (``--fresh-worker``: not); the peak RSS of each phase is read from VmHWM,
reset at every phase change.

    .venv/bin/python benchmarks/linear_svm_memory.py [--rows 500000] [--loss squared_hinge]

Prints per rank: the CSR it holds (indptr + indices + data), the RSS at the task's start and
right before its first batch is read (after the kernels and Arrow's compute functions are
loaded: ``warm-up``), the peak above that in each phase (reading the batches, building the
CSR, CoCoA+ rounds, polish) and the task's peak as a multiple of the CSR: must-show 6 asks
for (peak - input start) / CSR <= 2. MEMDBG=1 prints the RSS at every phase change.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "jvm-free-udfs"))

BATCH_ROWS = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch's default


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def write_rank_streams(rows, world, blocks, tmp, seed=0):
    """The synthetic problem of ``benchmarks/linear_svm.py``; each rank's rows (blocks b with
    b mod world == rank, sorted by (block, key), as the Spark stage hands them) written as an
    Arrow IPC stream of VectorUDT batches."""
    import pyarrow as pa
    from linear_svm import synthetic  # benchmarks/linear_svm.py

    X, y = synthetic(rows, seed=seed)
    keys = np.random.default_rng(seed + 1).integers(-2**62, 2**62, size=rows)
    blk = np.mod(keys, blocks)
    paths = []
    for r in range(world):
        sel = np.flatnonzero(blk % world == r)
        sel = sel[np.lexsort((keys[sel], blk[sel]))]
        Xr = X[sel]
        path = os.path.join(tmp, f"rank{r}.arrows")
        schema = None
        with pa.OSFile(path, "wb") as sink:
            writer = None
            for s in range(0, sel.size, BATCH_ROWS):
                part = Xr[s:s + BATCH_ROWS]
                m = part.shape[0]
                ip = part.indptr.astype(np.int32)
                vec = pa.StructArray.from_arrays(
                    [pa.array(np.zeros(m, np.int8)), pa.array(np.full(m, X.shape[1], np.int32)),
                     pa.ListArray.from_arrays(pa.array(ip), pa.array(part.indices.astype(np.int32))),
                     pa.ListArray.from_arrays(pa.array(ip), pa.array(part.data.astype(np.float64)))],
                    names=["type", "size", "indices", "values"])
                b = pa.RecordBatch.from_arrays(
                    [vec, pa.array(y[sel[s:s + m]].astype(np.float64)),
                     pa.array(keys[sel[s:s + m]]), pa.array(blk[sel[s:s + m]])],
                    names=["f", "y", "k", "b"])
                if writer is None:
                    schema = b.schema
                    writer = pa.ipc.new_stream(sink, schema)
                writer.write_batch(b)
            writer.close()
        paths.append(path)
    return paths


def _hwm():
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM:"))


def rank_main(rank, world, path, cfg, conn):
    import pyarrow as pa

    from sparkxml._core.barrier import reset_peak_rss
    from sparkxml.linear.tasks import make_load_fn, make_train_fn
    from sparkxml_kernels.collective import SocketCollective, open_listener
    from sparkxml_kernels.linear import data as kdata
    from sparkxml_kernels.linear import polish as kpol
    from sparkxml_kernels.linear import solver

    # the peak of each phase, exactly: at every phase change read VmHWM (the peak since the
    # last reset) and reset it to the current RSS (Linux: clear_refs 5)
    phase = {"name": "read"}
    base = [0]
    peaks: dict = {}

    def switch(name):
        if os.environ.get("MEMDBG"):
            os.write(2, (f"{time.time():.3f} rank {rank} {phase['name']} -> {name}: rss "
                         f"{(_rss() - base[0]) / 2**20:.1f} MiB, phase peak "
                         f"{(_hwm() - base[0]) / 2**20:.1f} MiB\n").encode())
        v = _hwm()
        k = phase["name"]
        peaks[k] = max(peaks.get(k, 0), v)
        reset_peak_rss()
        phase["name"] = name

    def tagged(fn, name):
        def run(*a, **kw):
            before = phase["name"]
            if before == "warm-up":
                return fn(*a, **kw)
            switch(name)
            try:
                return fn(*a, **kw)
            finally:
                switch(before)
        return run

    kpol_polish = kpol.polish
    solver.kpol = type(sys)("kpol_tagged")
    solver.kpol.__dict__.update(kpol.__dict__)
    solver.kpol.polish = tagged(kpol_polish, "polish")
    init = kdata.RowsBuilder.__init__

    def builder_init(self, *a, **kw):
        switch("build")
        init(self, *a, **kw)

    kdata.RowsBuilder.__init__ = builder_init
    listener, address = open_listener("127.0.0.1")
    conn.send(address)
    addresses = conn.recv()
    solver.warm_up = tagged(solver.warm_up, "warm-up")
    solver.train = tagged(solver.train, "train")
    if not cfg.get("fresh_worker"):
        # a reused Python worker: earlier tasks freed large arrays, which raises glibc's mmap
        # threshold (to 32 MiB at most), so later batches and temporaries come from the heap
        big = np.ones(30 * 2**20 // 8)
        del big
    # as pyspark does: a buffered Python file object (the batches' bytes are Python objects,
    # allocated by malloc, not by Arrow's memory pool)
    src = open(path, "rb", 65536)
    reader = pa.ipc.open_stream(src)
    rss0 = base[0] = _rss()
    reset_peak_rss()
    load = make_load_fn("features", "label", None, cfg["C"], cfg["fit_intercept"], False)
    state = load(iter(reader), rank, world)
    switch("connect")
    coll = SocketCollective(rank, world, addresses, b"k" * 16, 600.0, listener=listener)
    train = make_train_fn(cfg, "features", "label")
    t = time.perf_counter()
    arrays, info = train(state, coll, rank, world)
    sec = time.perf_counter() - t
    coll.close()
    switch("end")
    hwm = max(peaks.values())
    conn.send(dict(rank=rank, rss0=rss0, peaks=peaks, hwm=hwm, info=info, seconds=sec,
                   coef=None if arrays is None else arrays["coefficient_matrix"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--loss", default="squared_hinge")
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--max-iter", type=int, default=30)
    ap.add_argument("--no-intercept", action="store_true")
    ap.add_argument("--fresh-worker", action="store_true",
                    help="skip the large free that a reused worker has behind it")
    a = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _harness import Results, load_average

    res = Results("linear_svm_memory")
    world = blocks = 2
    cfg = dict(loss=a.loss, multi_class="ovr", schedule="shark", tol=1e-3,
               max_iter=a.max_iter, num_blocks=blocks, seed=0, C=a.C,
               fit_intercept=not a.no_intercept,
               fresh_worker=a.fresh_worker)
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_rank_streams(a.rows, world, blocks, tmp)
        ctx = mp.get_context("spawn")
        pipes, procs = [], []
        for r in range(world):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(target=rank_main, args=(r, world, paths[r], cfg, theirs))
            p.start()
            pipes.append(mine)
            procs.append(p)
        addrs = [c.recv() for c in pipes]
        for c in pipes:
            c.send(addrs)
        outs = sorted((c.recv() for c in pipes), key=lambda o: o["rank"])
        for p in procs:
            p.join()
    mib = 2.0 ** 20
    la = " / ".join(f"{x:.1f}" for x in load_average())
    print(f"\n{a.rows} rows x 100k, {a.loss}, C={a.C}, intercept={not a.no_intercept}, "
          f"2 ranks x 1 block (load average {la})\n")
    names = ["read", "build", "train", "polish"]
    print("| rank | rows | CSR MiB | RSS at task start MiB | warm-up MiB | peak above the input "
          "start, MiB: " + " / ".join(names) + " | (peak - input start) / CSR | rounds | s |")
    print("|---" * 9 + "|")
    for o in outs:
        i, csr = o["info"], o["info"]["csr_bytes"]
        r1 = i["rss_input_start_bytes"]
        print(f"| {o['rank']} | {i['n_rows']} | {csr / mib:.1f} | {o['rss0'] / mib:.0f} | "
              f"{(r1 - o['rss0']) / mib:.0f} | "
              + " / ".join(f"{(o['peaks'].get(k, r1) - r1) / mib:.1f}" for k in names)
              + f" | {(o['hwm'] - r1) / csr:.2f} | {i['rounds']} | {o['seconds']:.1f} |")
        case = (f"{a.rows} rows x 100k, {a.loss}, C={a.C}, intercept={not a.no_intercept}"
                f"{', fresh worker' if a.fresh_worker else ''}: rank {o['rank']}")
        res.add(case, "(peak - input start) / CSR", (o["hwm"] - r1) / csr, "x",
                note="must-show 6: <= 2")
        res.add(case, "CSR", csr / mib, "MiB")
        res.add(case, "train", o["seconds"], "s", note=f"{i['rounds']} rounds")
    coef = outs[0]["coef"]
    print(f"\ncoefficients: sum {coef.sum()!r}, |w|^2 {float((coef * coef).sum())!r}")
    res.write()


if __name__ == "__main__":
    main()
