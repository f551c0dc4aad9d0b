"""What collecting a training job's chunk rows costs, directly and through the shuffles that
spread a large result over several reduce tasks (``sparkxml._core.barrier.collect_chunk_rows``),
side by side in one session.

    .venv/bin/python benchmarks/collect_cost.py [--values 20000] [--repeats 8]

Two tasks each emit one float64 array of ``--values`` values as chunk rows; the figures are
the median seconds of ``--repeats`` collects of each kind.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results, session  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--values", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=8)
    args = ap.parse_args()
    import sparkxml._core.barrier as barrier
    from sparkxml._core.compat import to_arrow

    res = Results("collect_cost")
    n = args.values
    spark = session(master="local[2]", app="collect-cost")

    def emit(batches):
        import numpy as np

        from sparkxml._core.barrier import encode_array_batches

        for _ in batches:
            pass
        yield from encode_array_batches(0, {"w": np.arange(n, dtype=np.float64)}, {})

    out = spark.range(2, numPartitions=2).mapInArrow(emit, barrier.RESULT_SCHEMA)
    kinds = {"direct": lambda: to_arrow(out),
             "adaptive shuffle": lambda: to_arrow(out.repartition("rank", "name", "part")),
             "collect_chunk_rows": lambda: barrier.collect_chunk_rows(out)}
    for fn in kinds.values():
        fn()  # warm-up
    times = {k: [] for k in kinds}
    for _ in range(args.repeats):
        for k, fn in kinds.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    for k, ts in times.items():
        med = statistics.median(ts)
        res.add(k, "collect", med, "s", note=f"2 tasks x {8 * n / 1e3:.0f} KB")
        print(f"{k}: median {med:.3f} s")
    res.write()
    spark.stop()


if __name__ == "__main__":
    main()
