"""Cost of faults in a barrier training stage: a GBT fit clean, with silent connections to
every rank's port, with a killed rank 0 / rank 1, and with a frozen rank, one run.

    python benchmarks/gbt_faults.py [--pairs 5] [--master local[2,4]]

GBTRegressor on 2000 generated rows x 5 features, 8 trees of depth 4, subsamplingRate 0.8,
numWorkers 2 (the data of tests/reliability/test_core_barrier_faults.py), after a warm-up fit.
Clean and stray fits are interleaved ``--pairs`` times (stray: every rank opens 3 silent
connections to the other rank's listener before the ranks connect); the kill and stop
faults happen once (a marker file), after round 1, so the retried stage runs clean; the
stopped rank's peer waits ``timeoutSeconds`` = 3. Every fit is compared with the first clean
model (``same`` = every model array equal). Fit time = the whole ``fit`` call.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pandas as pd
from _harness import Results, session


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--master", default="local[2,4]")
    args = ap.parse_args(argv)
    from sparkxml import GBTRegressor

    res = Results("gbt_faults")
    spark = session(master=args.master, app="gbt-faults",
                    conf={"spark.sql.shuffle.partitions": "4"}, log_level="FATAL")
    rng = np.random.default_rng(11)
    X = rng.normal(size=(2000, 5))
    cols = [f"x{i}" for i in range(5)]
    pdf = pd.DataFrame(X, columns=cols)
    pdf["label"] = X[:, 0] * 2 + np.sin(X[:, 1]) + 0.1 * rng.normal(size=2000)
    df = spark.createDataFrame(pdf).repartition(2).cache()
    df.count()

    def fit(fault=None, **kw):
        est = GBTRegressor(featuresCols=cols, maxIter=8, maxDepth=4, subsamplingRate=0.8,
                           numWorkers=2, seed=5, **kw)
        est._fault_injection = fault
        t0 = time.perf_counter()
        model = est.fit(df)
        return model, time.perf_counter() - t0

    def same(a, b):
        x, y = a.predictor.to_arrays(), b.predictor.to_arrays()
        return all(np.array_equal(np.asarray(x[k]), np.asarray(y[k]),
                                  equal_nan=np.asarray(x[k]).dtype.kind == "f") for k in x)

    fit()  # warm-up
    ref, _ = fit()
    clean, stray = [], []
    for i in range(args.pairs):
        _, c = fit()
        m, s = fit({"kind": "stray", "count": 3})
        clean.append(c)
        stray.append(s)
        print(f"pair {i}: clean {c:.2f} s, 3 silent connections per port {s:.2f} s, "
              f"same={same(m, ref)}", flush=True)
    print(f"median: clean {np.median(clean):.2f} s, stray {np.median(stray):.2f} s, ratio "
          f"{np.median(stray) / np.median(clean):.3f}; fastest: clean {min(clean):.2f} s, "
          f"stray {min(stray):.2f} s, ratio {min(stray) / min(clean):.3f}")
    res.add("clean fit", "fit (median)", np.median(clean), "s", note=f"{args.pairs} pairs")
    res.add("3 silent connections per port", "fit (median)", np.median(stray), "s",
            note=f"{args.pairs} pairs")
    res.add("3 silent connections per port / clean", "fit ratio (medians)",
            np.median(stray) / np.median(clean), "x")
    tmp = tempfile.mkdtemp()
    for i, (name, fault, kw) in enumerate([
            ("rank 0 killed (SIGKILL) after round 1", {"rank": 0, "kind": "kill"}, {}),
            ("rank 1 killed (SIGKILL) after round 1", {"rank": 1, "kind": "kill"}, {}),
            ("rank 1 frozen (SIGSTOP) after round 1, timeoutSeconds=3",
             {"rank": 1, "kind": "stop"}, {"timeoutSeconds": 3})]):
        fault = dict(fault, after_round=1, marker=os.path.join(tmp, f"fault-{i}"))
        m, t = fit(fault, **kw)
        happened, same_model = os.path.exists(fault['marker']), same(m, ref)
        print(f"{name}: {t:.2f} s, fault happened={happened}, "
              f"same={same_model}", flush=True)
        res.add(name, "fit", t, "s", note=f"fault happened={happened}, same={same_model}")
    spark.stop()
    res.write()


if __name__ == "__main__":
    main()
