"""What a new Python process pays to load a family's kernels from the numba cache, one source
tree beside another, in alternating processes.

    python benchmarks/kernel_load.py --tree OLD=DIR --tree NEW=DIR [--rounds 5]
                                     [--groups fastxml gbt linear forest labeltree fm]
                                     [--precompile]

DIR is a source tree (a ``git archive`` of a commit, say) whose ``jvm-free-udfs`` holds the
kernels; each tree uses its own cache (``<DIR>/jvm-free-udfs/sparkxml_kernels/_numba_cache``:
the cache variables ``SPARKXML_NUMBA_CACHE_DIR``/``NUMBA_CACHE_DIR`` are removed from the
children's environment). ``--precompile`` fills each tree's cache first
(``python -m sparkxml_kernels.precompile --groups ... --jobs 2``). A run in which a tree
compiles any kernel stops with an error: the figure would be a compile, not a load.

Each round starts, for every group and every tree in turn, a new process that imports
``sparkxml_kernels.precompile`` and calls ``load_kernels(group)``: what a fresh Spark Python
worker does before its first training task of that family (``warm_async``). Reported per
group and tree: the median over the rounds of the load's wall and CPU seconds, and the
import's wall seconds before it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

GROUPS = ("fastxml", "gbt", "linear", "forest", "labeltree", "fm")

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from sparkxml_kernels import precompile
t1, c1 = time.perf_counter(), time.process_time()
precompile.load_kernels(sys.argv[1])
t2, c2 = time.perf_counter(), time.process_time()
loaded, compiled = precompile._counts()
print("RESULT " + json.dumps({"import": t1 - t0, "load": t2 - t1, "load_cpu": c2 - c1,
                              "loaded": loaded, "compiled": compiled,
                              "from": precompile.__file__}))
"""


def _run(path: str, group: str) -> dict:
    from _harness import tree_env

    out = subprocess.run([sys.executable, "-c", _CHILD, group], env=tree_env(path, True),
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"{path}: loading {group} failed:\n{out.stderr[-3000:]}")
    r = json.loads(next(line[7:] for line in out.stdout.splitlines()
                        if line.startswith("RESULT ")))
    if not r["from"].startswith(path):
        sys.exit(f"{path}: the child imported {r['from']}")
    if r["compiled"]:
        sys.exit(f"{path}: {r['compiled']} kernel(s) of {group} compiled (the cache is not "
                 f"warm; run with --precompile)")
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="LABEL=DIR, twice or more")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--groups", nargs="*", choices=GROUPS, default=list(GROUPS))
    ap.add_argument("--precompile", action="store_true",
                    help="fill each tree's cache with the groups first")
    args = ap.parse_args(argv)
    from _harness import Results, source_trees, tree_env

    trees = source_trees(ap, args.tree)
    if args.precompile:
        for label, path in trees:
            subprocess.run([sys.executable, "-m", "sparkxml_kernels.precompile", "--groups",
                            *args.groups, "--jobs", "2"], env=tree_env(path, True),
                           check=True)

    res = Results("kernel_load")
    seen: dict = {}
    for _ in range(args.rounds):
        for group in args.groups:
            for label, path in trees:
                seen.setdefault((group, label), []).append(_run(path, group))
    first, last = trees[0][0], trees[-1][0]
    print("| group | kernels | " + " | ".join(
        f"{lb} load s (CPU s), import s" for lb, _ in trees) + f" | {last} / {first} |")
    print("|---" * (len(trees) + 3) + "|")
    for group in args.groups:
        cells, med = [], {}
        for label, _ in trees:
            runs = seen[(group, label)]
            med[label] = statistics.median(r["load"] for r in runs)
            cpu = statistics.median(r["load_cpu"] for r in runs)
            imp = statistics.median(r["import"] for r in runs)
            cells.append(f"{med[label]:.3f} ({cpu:.3f}), {imp:.3f}")
            note = f"median of {len(runs)} new processes"
            res.add(group, f"{label} load", med[label], "s", note=note)
            res.add(group, f"{label} load CPU", cpu, "s", note=note)
            res.add(group, f"{label} import", imp, "s", note=note)
        ratio = med[last] / med[first]
        res.add(group, f"{last} / {first}", ratio, "x")
        kernels = seen[(group, first)][0]["loaded"]
        print(f"| {group} | {kernels} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    res.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
