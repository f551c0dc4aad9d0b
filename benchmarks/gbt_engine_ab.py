"""The GBT engine of this checkout against another one (e.g. before a change), same data, one
process at a time, alternating, CPU time of ``booster.train``.

    git archive <commit> jvm-free-udfs | tar -x -C /tmp/base
    python benchmarks/gbt_engine_ab.py --baseline /tmp/base/jvm-free-udfs \
        [--rows 1000000] [--features 50] [--trees 20] [--objective logistic] [--pairs 3]
        [--nthread 1]

Each run is a fresh interpreter importing ``sparkxml_kernels`` from the given directory
(``PYTHONPATH``): bins the data, warms the numba kernels up on a small fit, then times
``train`` (maxDepth 6, stepSize 0.1) with ``time.process_time`` -- on a shared machine the
process's CPU time is the fairer measure (``--nthread N``: the booster's threads; the wall
time is printed beside, as CPU time alone cannot show how well threads overlap). Prints
every run and the median ratio this / baseline.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

from _harness import Results, load_average

RUN = r"""
import sys, time
import numpy as np
from sparkxml_kernels.gbt import bin_data, edges_from_sketch, sketch, train
n, d, trees, objective = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
nthread = int(sys.argv[5])
rng = np.random.default_rng(0)
X = rng.standard_normal((n, d))
z = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(n)
y = (z > 0).astype(float) if objective == "logistic" else z
edges = edges_from_sketch(sketch(X, None, 256), 256)
Xb = bin_data(X, edges)
p = dict(maxIter=trees, maxDepth=6, stepSize=0.1, objective=objective)
if nthread > 1:
    p["nthread"] = nthread
train(Xb[:50000], y[:50000], None, edges, dict(p, maxIter=2))
t, w = time.process_time(), time.perf_counter()
pred, _ = train(Xb, y, None, edges, p)
print(time.process_time() - t, float(np.abs(pred.predict_raw(X[:1000])).sum()),
      time.perf_counter() - w)
"""


def run(path, args):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
    out = subprocess.run([sys.executable, "-c", RUN, str(args.rows), str(args.features),
                          str(args.trees), args.objective, str(args.nthread)], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", required=True, help="a jvm-free-udfs directory")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--objective", default="logistic",
                    choices=["logistic", "squared_error"])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--nthread", type=int, default=1,
                    help="booster nthread (> 1: wall seconds matter too, printed beside)")
    args = ap.parse_args()
    res = Results("gbt_engine_ab")
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jvm-free-udfs")
    ratios, this_cpu, base_cpu = [], [], []
    for i in range(args.pairs):
        a, ca, wa = run(here, args)
        b, cb, wb = run(args.baseline, args)
        ratios.append(a / b)
        this_cpu.append(a)
        base_cpu.append(b)
        print(f"pair {i}: this {a:.2f} s cpu ({wa:.2f} s wall), baseline {b:.2f} s cpu "
              f"({wb:.2f} s wall), ratio {a / b:.3f}, checksums {ca:.6f} / {cb:.6f}, "
              f"load average {load_average()[0]:.1f}", flush=True)
    ratios.sort()
    print(f"median this / baseline: {ratios[len(ratios) // 2]:.3f} ({args.objective}, "
          f"{args.rows} x {args.features}, {args.trees} trees, nthread {args.nthread})")
    case = (f"{args.objective}, {args.rows} x {args.features}, {args.trees} trees, nthread "
            f"{args.nthread}, baseline {args.baseline}")
    res.add(case, "CPU ratio this / baseline (median)", ratios[len(ratios) // 2], "x",
            note=f"{args.pairs} alternating pairs")
    res.add(case, "this CPU (median)", sorted(this_cpu)[len(this_cpu) // 2], "s")
    res.add(case, "baseline CPU (median)", sorted(base_cpu)[len(base_cpu) // 2], "s")
    res.write()


if __name__ == "__main__":
    main()
