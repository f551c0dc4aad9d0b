"""Compile the kernels' signatures that the estimators use into the numba cache, ahead of use.

A fresh environment otherwise compiles every kernel a fit touches on first use (FastXML on
Bibtex: ~12 s, GBT: ~10 s, in every Python worker). ``precompile()`` compiles the signatures
listed in ``_warm_signatures.txt`` (one line each: group, module, kernel, numba signature) into
``_jit.cache_dir()``; the build runs it (``SPARKXML_PRECOMPILE=0`` skips it), and so does
``sparkxml precompile`` or ``python -m sparkxml_kernels.precompile``.

The list is *recorded*, not written by hand: ``python -m sparkxml._core.warmup_record`` runs each
estimator's fit and transform on small data in a new process with an empty cache and reads
back, from the cache's index files, every signature numba compiled (callees included). A
signature whose kernel was changed since is compiled anyway (a harmless extra entry); a
kernel added since is compiled on first use, as before; ``tests/kernels/test_core_jit.py`` fails
when a kernel is in neither the list nor ``NOT_WARMED``.

``targets`` (``--targets``) compiles for named CPU targets instead of this process's own:
``host`` (this machine's CPU type), ``generic`` (the architecture's baseline: a cache that
serves any CPU of it) or an x86-64 psABI level (``x86-64-v3`` ...), each in a child process
with ``NUMBA_CPU_NAME`` set. The build compiles ``build_targets()``: ``generic`` unless
``SPARKXML_PRECOMPILE_TARGETS`` says otherwise (e.g. ``"host generic"``; see ``_jit`` for how
a worker picks an entry). Measured under load (``benchmarks/portable_cache_speed.py``), the
generic code of the GBT, FastXML and FM kernels took no more CPU time than the host's.

``warm_async(groups)`` loads (or compiles) a group's signatures on a background thread, so a
Spark task can overlap it with reading its data; ``load_kernels(groups)`` loads them before it
returns, so that a task's memory figures leave them out (``sparkxml._core.barrier.TaskMemory``).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

from . import _jit

MANIFEST = os.path.join(_jit.PACKAGE_DIR, "_warm_signatures.txt")
TARGETS_ENV = "SPARKXML_PRECOMPILE_TARGETS"
BUILD_TARGETS = ("generic",)


def build_targets() -> tuple:
    """The targets the build compiles: ``$SPARKXML_PRECOMPILE_TARGETS`` (names separated by
    spaces), else ``generic``."""
    return tuple(os.environ.get(TARGETS_ENV, "").split()) or BUILD_TARGETS


def known_targets() -> tuple:
    """``host`` and the portable targets of this machine's architecture."""
    import llvmlite.binding as ll

    return ("host",) + tuple(n for n, _ in _jit.portable_targets(ll.get_process_triple()))


def _types_namespace() -> dict:
    from numba.core import types

    ns = dict(vars(types))
    # numba names the boolean type "bool" in reprs, but binds types.bool only under numpy 2
    # (numpy 1 has no np.bool): without this the name falls through to Python's bool class
    ns["bool"] = types.boolean
    return ns


def parse_signature(text: str) -> tuple:
    """A signature line's numba argument types (``repr`` of the type tuple, evaluated in
    ``numba.core.types``)."""
    # a callee called with constants is compiled for their literal types, whose repr
    # ("Literal[int](0)") is no constructor call
    code = text.replace("Literal[int](", "IntegerLiteral(").replace(
        "Literal[bool](", "BooleanLiteral(")
    sig = eval(code, _types_namespace())  # noqa: S307 - our own file, numba type reprs only
    if not isinstance(sig, tuple):
        raise ValueError(f"not a signature tuple: {text!r}")
    return sig


def read_manifest(path: str = MANIFEST, groups=None) -> list:
    """``[(group, module, qualname, signature text), ...]``, of ``groups`` only if given."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            group, module, qualname, sig = line.rstrip("\n").split("\t")
            if groups is None or group in groups:
                out.append((group, module, qualname, sig))
    return out


def cached_signatures(cache_root: str) -> list:
    """``[(module, qualname, signature text), ...]`` of every entry in a cache directory's
    index files (those written by this numba version)."""
    import numba

    out = set()
    for root, _, files in os.walk(cache_root):
        sub = os.path.relpath(root, cache_root)
        pkg = "sparkxml_kernels" if sub in (".", "_root") else "sparkxml_kernels." + \
            sub.replace(os.sep, ".")
        for f in files:
            if not f.endswith(".nbi"):
                continue
            base = f[:-4].rsplit("-", 1)[0]  # "<module>.<qualname>" (then -<lineno>.pyXY)
            modname, qualname = base.split(".", 1)
            with open(os.path.join(root, f), "rb") as fh:
                if pickle.load(fh) != numba.__version__:
                    continue
                _, overloads = pickle.loads(fh.read())
            for key in overloads:
                out.add((f"{pkg}.{modname}", qualname.replace(".locals.", ".<locals>."),
                         repr(key[0])))
    return sorted(out)


def dispatchers(module: str, qualname: str) -> list:
    """The kernels of ``module`` whose function is ``qualname`` (two or more for a kernel a
    factory makes per constant, e.g. gbt.splitting's ``find_splits``)."""
    mod = importlib.import_module(module)
    seen, out = set(), []
    for v in vars(mod).values():
        py = getattr(v, "py_func", None)
        if py is not None and py.__qualname__ == qualname and py.__module__ == module \
                and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def _counts() -> tuple:
    """(loaded from the cache, compiled) over this process's kernels so far."""
    return (sum(sum(d.stats.cache_hits.values()) for d in _jit.KERNELS),
            sum(sum(d.stats.cache_misses.values()) for d in _jit.KERNELS))


def _compile(entries) -> tuple:
    """Compile (or load from the cache) each entry; returns (done, [failures], seconds,
    (loaded, compiled) counts of this process)."""
    t = time.perf_counter()
    done, failed = 0, []
    for _, module, qualname, sig in entries:
        try:
            ds = dispatchers(module, qualname)
            if not ds:
                raise LookupError("no such kernel")
            types = parse_signature(sig)
            for d in ds:
                d.compile(types)
            done += 1
        except Exception as e:  # a stale line must not stop the others
            failed.append(f"{module}.{qualname}{sig[:60]}...: {type(e).__name__}: {e}")
    return done, failed, time.perf_counter() - t, _counts()


def _precompile_targets(groups, jobs, manifest, verbose, targets) -> dict:
    """``precompile`` once per target, each in a child process; the results summed."""
    bad = sorted(set(targets) - set(known_targets()))
    if bad:
        raise ValueError(f"unknown precompile target(s) {bad}; known: {list(known_targets())}")
    t0 = time.perf_counter()
    out = dict(entries=0, compiled=0, failed=[], serial_loaded=0, serial_compiled=0,
               cache_dir=_jit.cache_dir(), targets={})
    for target in dict.fromkeys(targets):
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", _jit.CACHE_ENV)}
        # the same directory as this process; entries of this target only (no fallback)
        env.update({_jit.CACHE_ENV: _jit.cache_dir(), _jit.FALLBACK_ENV: "0"})
        if target != "host":  # the name alone sets the ISA: the key's features are ""
            env.update(NUMBA_CPU_NAME=target, NUMBA_CPU_FEATURES="")
        cmd = [sys.executable, "-m", "sparkxml_kernels.precompile", "--jobs", str(jobs),
               "--manifest", manifest, "--json"] + (["--groups"] + list(groups)
                                                     if groups is not None else [])
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        try:
            res = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            out["failed"].append(f"target {target}: rc {r.returncode}: {r.stderr[-2000:]}")
            continue
        out["targets"][target] = res
        for k in ("compiled", "serial_loaded", "serial_compiled"):
            out[k] += res[k]
        out["entries"] = res["entries"]
        out["failed"] += [f"target {target}: {m}" for m in res["failed"]]
        if verbose:
            print(f"precompile: target {target}: {res['compiled']} of {res['entries']} "
                  f"signatures in {res['seconds']:.1f} s", flush=True)
    out["seconds"] = time.perf_counter() - t0
    return out


def precompile(groups=None, jobs: int = 1, manifest: str = MANIFEST,
               verbose: bool = False, targets=None) -> dict:
    """Compile the listed signatures (of ``groups``, default all) into the numba cache.

    Parameters
    ----------
    groups : iterable of str, optional
        Groups of ``_warm_signatures.txt`` (``fastxml``, ``gbt``, ``gbt_threads``, ``linear``,
        ``fm``, ``forest``, ``labeltree``); all by default.
    jobs : int
        Processes compiling side by side (each takes whole modules). A second, serial pass
        then loads every entry, which recompiles any that a concurrent index write lost.
    manifest : str
        The signature list.
    verbose : bool
        Print a line per phase.
    targets : sequence of str, optional
        CPU targets to compile for, each in a child process (``host``, ``generic``,
        ``x86-64-v2`` ... ``x86-64-v4``; ``build_targets()`` is what the build compiles). By
        default this process compiles for its own CPU, loading what the cache already has
        for it or for a portable target it can run.

    Returns
    -------
    dict
        ``entries``, ``compiled`` (entries done), ``failed`` (messages), ``seconds``,
        ``cache_dir``; ``serial_loaded`` / ``serial_compiled``: kernels the final serial pass
        loaded from the cache / had to compile (callees included); with ``targets``, these
        summed over the targets, and ``targets``: each target's own dict.
    """
    if int(jobs) < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs!r}")
    known = {e[0] for e in read_manifest(manifest)}
    if groups is not None:
        groups = list(groups)
        bad = sorted(set(groups) - known)
        if bad:
            raise ValueError(f"unknown precompile group(s) {bad}; known: {sorted(known)}")
    if targets is not None:
        return _precompile_targets(groups, jobs, manifest, verbose, list(targets))
    entries = read_manifest(manifest, groups)
    t0 = time.perf_counter()
    failed: list = []
    if jobs > 1 and len(entries) > 1:
        by_module: dict = {}
        for e in entries:
            by_module.setdefault(e[1], []).append(e)
        chunks = [[] for _ in range(int(jobs))]
        for mod in sorted(by_module, key=lambda m: -len(by_module[m])):
            min(chunks, key=len).extend(by_module[mod])
        import multiprocessing

        with ProcessPoolExecutor(int(jobs), mp_context=multiprocessing.get_context("spawn")) \
                as ex:
            for _, f, _, _ in ex.map(_compile, [c for c in chunks if c]):
                failed += f
        if verbose:
            print(f"precompile: {len(entries)} signatures in {jobs} processes, "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    done, f, s, (loaded, compiled) = _compile(entries)
    if verbose:
        print(f"precompile: serial pass {s:.1f} s ({loaded} loaded from the cache, {compiled} "
              f"compiled)", flush=True)
    failed = sorted(set(failed) | set(f))
    return dict(entries=len(entries), compiled=done, failed=failed,
                seconds=time.perf_counter() - t0, cache_dir=_jit.cache_dir(),
                serial_loaded=loaded, serial_compiled=compiled)


_warmed: dict = {}  # group -> the thread that loads it
_warm_lock = threading.Lock()


def warm_async(*groups):
    """Load (or compile) the groups' signatures on a daemon thread, once a process; returns
    the thread, or None when every group was already started (or ``SPARKXML_WARMUP=0``).
    Errors are ignored: the kernel is then compiled where it is first called, as without
    warm-up."""
    if os.environ.get("SPARKXML_WARMUP", "1") == "0":
        return None
    with _warm_lock:
        todo = [g for g in groups if g not in _warmed]
        if not todo:
            return None
        th = threading.Thread(target=_compile, args=(read_manifest(MANIFEST, set(todo)),),
                              name="sparkxml-warmup", daemon=True)
        _warmed.update((g, th) for g in todo)
        th.start()  # under the lock: load_kernels never joins a thread not yet started
    return th


def load_kernels(*groups) -> None:
    """Load (or compile) the groups' signatures now, waiting for any loading that an earlier
    :func:`warm_async` started in this process (a no-op with ``SPARKXML_WARMUP=0``)."""
    warm_async(*groups)
    with _warm_lock:
        threads = {_warmed.get(g) for g in groups} - {None}
    for th in threads:
        th.join()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sparkxml_kernels.precompile",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--groups", nargs="*", default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--targets", nargs="*", default=None,
                    help="CPU targets: host, generic, x86-64-v2/v3/v4 (default: this "
                    "process's CPU)")
    ap.add_argument("--build", action="store_true",
                    help="the build's targets ($SPARKXML_PRECOMPILE_TARGETS, else generic)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--manifest", default=MANIFEST, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    targets = build_targets() if args.build else args.targets
    r = precompile(args.groups, jobs=args.jobs, manifest=args.manifest,
                   verbose=not (args.quiet or args.json), targets=targets)
    if args.json:  # a parent precompile reads the last line
        print(json.dumps(r))
        return 1 if r["failed"] else 0
    import numba

    print(f"precompiled {r['compiled']} of {r['entries']} signatures into {r['cache_dir']} "
          f"in {r['seconds']:.1f} s (last pass: {r['serial_loaded']} loaded, "
          f"{r['serial_compiled']} compiled; numba {numba.__version__}, Python "
          f"{sys.version_info[0]}.{sys.version_info[1]}"
          + (f", targets {' '.join(targets)}" if targets else "") + ")"
          + (f"; {len(r['failed'])} failed" if r["failed"] else ""))
    for m in r["failed"]:
        print("  failed:", m, file=sys.stderr)
    return 1 if r["failed"] else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
