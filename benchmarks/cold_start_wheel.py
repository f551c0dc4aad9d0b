"""Cold start from a wheel on a CPU other than the build's: the first GBT (or FastXML) fit of a
new Spark application, with and without the portable cache lookup.

    python benchmarks/cold_start_wheel.py [--kind gbt|fastxml] [--wheel dist/sparkxml-...whl]
                                          [--groups gbt] [--data DIR] [--cpu nehalem]

1. ``pip wheel --no-deps`` of this checkout (pip's build isolation: the build gets its own
   numba, as on any machine that builds the wheel), with ``SPARKXML_PRECOMPILE_GROUPS`` set
   to ``--groups`` to keep the build short (a GBT fit warms the ``gbt`` group only); or
   ``--wheel`` to use one already built.
2. The wheel is unpacked into two fresh directories (what an install puts in site-packages).
3. In each, a new process (``benchmarks/_cold.py``: a new local[2] Spark application, the
   driver and its Python workers importing sparkxml from that directory) fits
   GBTClassifier on lightgbm_binary (100 trees, depth 6; ``--kind fastxml``: FastXML on
   Bibtex, 50 trees, with the ``fastxml`` group) twice, with
   ``NUMBA_CPU_NAME=--cpu`` and the x86-64-v2 features, so every numba cache key differs
   from the build's (as on a cluster worker of another CPU type):

   - "before": ``SPARKXML_PORTABLE_FALLBACK=0``, the lookup as it was (only this CPU's own
     entries): every kernel compiles;
   - "after": the portable lookup: the build's ``generic`` entries are loaded.

Compilations are counted twice: by the workers and the driver themselves (numba's cache
misses, printed by ``_cold.py``), and by the entries saved under the simulated CPU's key in
the directory's cache afterwards (numba saves every kernel it compiles, in any process).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

from _cold import _env

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
V2 = "+cx16,+popcnt,+sahf,+sse3,+sse4.1,+sse4.2,+ssse3"


def _entries(cache: str) -> dict:
    """{(triple, cpu, features): entries} over a cache directory's index files."""
    out: dict = {}
    for root, _, files in os.walk(cache):
        for f in files:
            if f.endswith(".nbi"):
                with open(os.path.join(root, f), "rb") as fh:
                    pickle.load(fh)
                    _, overloads = pickle.loads(fh.read())
                for key in overloads:
                    out[key[1]] = out.get(key[1], 0) + 1
    return out


def _build(groups: str, out: str) -> str:
    env = dict(os.environ, SPARKXML_PRECOMPILE_GROUPS=groups)
    env.pop("PYTHONPATH", None)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", out, REPO],
                       env=env, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stdout[-3000:] + r.stderr[-3000:])
    print(f"pip wheel: {time.perf_counter() - t:.1f} s (precompile groups: {groups})")
    return glob.glob(os.path.join(out, "sparkxml-*.whl"))[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=["gbt", "fastxml"], default="gbt",
                    help="GBTClassifier on lightgbm_binary, or FastXML on Bibtex")
    ap.add_argument("--wheel", default=None)
    ap.add_argument("--groups", default=None, help="precompile groups (default: --kind)")
    ap.add_argument("--data", default=None)
    ap.add_argument("--cpu", default="nehalem")
    ap.add_argument("--modes", nargs="+", default=["before", "after"])
    args = ap.parse_args(argv)
    data = os.environ.get("SPARKXML_DATA") or os.path.join(REPO, "..", "shared", "data")
    args.data = args.data or os.path.join(data, {"gbt": "lightgbm_binary",
                                                 "fastxml": "bibtex/xc_split"}[args.kind])
    args.groups = args.groups or args.kind
    tmp = tempfile.mkdtemp(prefix="sparkxml-wheel-")
    try:
        wheel = args.wheel or _build(args.groups, os.path.join(tmp, "dist"))
        rows = []
        for mode in args.modes:
            site = os.path.join(tmp, mode)
            with zipfile.ZipFile(wheel) as z:
                z.extractall(site)
            cache = os.path.join(site, "sparkxml_kernels", "_numba_cache")
            built = _entries(cache)
            env = _env(site)
            env.update(NUMBA_CPU_NAME=args.cpu, NUMBA_CPU_FEATURES=V2)
            if mode == "before":
                env["SPARKXML_PORTABLE_FALLBACK"] = "0"
            else:
                env.pop("SPARKXML_PORTABLE_FALLBACK", None)
            load0 = os.getloadavg()[0]
            r = subprocess.run([sys.executable, os.path.join(HERE, "_cold.py"), args.kind,
                                args.data, "2"], env=env, capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError(r.stderr[-4000:])
            out = json.loads(r.stdout.strip().splitlines()[-1])
            after = _entries(cache)
            new = {m: n - built.get(m, 0) for m, n in after.items() if n != built.get(m, 0)}
            rows.append((mode, out, new, load0, os.getloadavg()[0]))
            print(f"{mode}: cache entries in the wheel {built}; saved during the run {new}")
            print(f"{mode}: {out['where']}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n| lookup | 1st fit s (new application) | 2nd fit s | 1st / 2nd | kernels compiled "
          "(entries saved) | load average |")
    print("|---|---|---|---|---|---|")
    for mode, out, new, l0, l1 in rows:
        f1, f2 = out["fits"]
        print(f"| {mode} | {f1:.2f} | {f2:.2f} | {f1 / f2:.2f} | {sum(new.values())} | "
              f"{l0:.1f} -> {l1:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
