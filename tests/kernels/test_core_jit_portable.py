"""The portable numba cache: what the build compiles (``precompile --build``: the ``generic``
target) is loaded, and nothing compiled, by a process whose CPU differs from the build's.

The full path (``pip wheel .``, an install in a fresh directory, a GBT fit on Spark in a new
application) is ``benchmarks/cold_start_wheel.py``: a wheel build compiles every group and a
Spark fit starts a JVM, too slow for CI. This test runs the build's precompile command on a
fresh copy of the package, for the ``gbt`` group only (the kernels a GBT fit's tasks warm,
recorded from real fits), and then, in a new process with another CPU name and features
(``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``, which numba puts in every cache key), loads them
the way a fit's task does (``warm_async``) and counts numba compilations.
"""
import json
import os
import pickle
import platform
import shutil
import subprocess
import sys
import textwrap

import pytest

from sparkxml_kernels import _jit

PKG = _jit.PACKAGE_DIR
V2 = "+cx16,+popcnt,+sahf,+sse3,+sse4.1,+sse4.2,+ssse3"


def _other_cpu() -> dict:
    """A CPU unlike the build's target that this machine can still run code for: on x86-64
    a Nehalem (SSE4.2, no AVX), elsewhere this CPU's name with no features listed."""
    import llvmlite.binding as ll

    if platform.machine() in ("x86_64", "AMD64"):
        return {"NUMBA_CPU_NAME": "nehalem", "NUMBA_CPU_FEATURES": V2}
    return {"NUMBA_CPU_NAME": ll.get_host_cpu_name(), "NUMBA_CPU_FEATURES": ""}


def _env(root, **extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARKXML_NUMBA_CACHE_DIR", "NUMBA_CACHE_DIR", "NUMBA_CPU_NAME",
                        "NUMBA_CPU_FEATURES", "SPARKXML_PRECOMPILE_TARGETS", "SPARKXML_WARMUP",
                        _jit.FALLBACK_ENV)}
    env.update(PYTHONPATH=root, PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def _index_magics(cache):
    """Every index entry's target part (triple, CPU name, features)."""
    out = set()
    for root, _, files in os.walk(cache):
        for f in files:
            if f.endswith(".nbi"):
                with open(os.path.join(root, f), "rb") as fh:
                    pickle.load(fh)  # numba's version
                    _, overloads = pickle.loads(fh.read())
                out |= {key[1] for key in overloads}
    return out


_FIRST_USE = textwrap.dedent("""
    import json, sys
    from numba.core import event
    from numba.core.registry import cpu_target

    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            f = ev.data["dispatcher"].py_func
            compiled.append(f"{f.__module__}.{f.__qualname__}")

        def on_end(self, ev):
            pass

    event.register("numba:compile", Count())
    import sparkxml_kernels
    from sparkxml_kernels import _jit, precompile
    from sparkxml_kernels.gbt.splitting import _soft

    assert sparkxml_kernels.__file__.startswith(sys.argv[1]), sparkxml_kernels.__file__
    precompile.warm_async("gbt").join()  # what a GBT training task starts with
    warmed = list(compiled)
    loaded = sum(sum(d.stats.cache_hits.values()) for d in _jit.KERNELS)
    assert _soft(3.0, 1.0) == 2.0  # a loaded kernel runs
    # loading skipped numba's implementation registries (a compile imports them)
    registries = [m for m in ("numba.np.arraymath", "numba.np.linalg", "numba.typed.typeddict")
                  if m in sys.modules]
    # the count is live: a signature no cache has compiles here, and is counted
    _soft(__import__("numpy").float32(3.0), __import__("numpy").float32(1.0))
    print(json.dumps(dict(magic=list(cpu_target.target_context.codegen().magic_tuple()),
                          warm_compiled=warmed, loaded=loaded, after=compiled,
                          registries=registries,
                          entries=len(precompile.read_manifest(groups={"gbt"})))))
""")


def test_fallback_loads_only_levels_the_cpu_can_run():
    t = "x86_64-unknown-linux-gnu"
    have = lambda *f: (t, "some-cpu", ",".join("+" + x for x in f))  # noqa: E731
    v3 = _jit._X86_V3
    assert _jit.fallback_magics(have(*v3)) == ((t, "x86-64-v3", ""), (t, "x86-64-v2", ""),
                                               (t, "generic", ""))
    # no AVX2: neither v3 nor v4 code may run there
    assert _jit.fallback_magics(have(*_jit._X86_V2, "avx")) == ((t, "x86-64-v2", ""),
                                                                (t, "generic", ""))
    # a feature listed as off ("-avx2") is not had
    assert (t, "x86-64-v3", "") not in _jit.fallback_magics(
        (t, "cpu", ",".join("+" + x for x in v3 if x != "avx2") + ",-avx2"))
    # a process compiling for generic itself has nothing to fall back to
    assert _jit.fallback_magics((t, "generic", "")) == ()
    a = "aarch64-unknown-linux-gnu"
    assert _jit.fallback_magics((a, "neoverse-n1", "+neon")) == ((a, "generic", ""),)


def test_fallback_off_by_env(monkeypatch):
    t = "x86_64-unknown-linux-gnu"
    monkeypatch.setenv(_jit.FALLBACK_ENV, "0")
    assert _jit.fallback_magics((t, "znver4", "+sse2")) == ()


def test_build_cache_is_loaded_on_another_cpu_with_no_compile(tmp_path):
    root = str(tmp_path / "site")
    shutil.copytree(PKG, os.path.join(root, "sparkxml_kernels"), copy_function=shutil.copyfile,
                    ignore=shutil.ignore_patterns("__pycache__", "_numba_cache"))
    # setup.py's command (its env: no cache override), for one group
    r = subprocess.run([sys.executable, "-m", "sparkxml_kernels.precompile", "--quiet",
                        "--build", "--jobs", "1", "--groups", "gbt"], env=_env(root),
                       cwd=root, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    cache = os.path.join(root, "sparkxml_kernels", "_numba_cache")
    built = _index_magics(cache)
    assert {m[1:] for m in built} == {("generic", "")}, built

    other = _other_cpu()
    r = subprocess.run([sys.executable, "-c", _FIRST_USE, root], env=_env(root, **other),
                       cwd=root, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # the process really ran as another CPU: its own key is none of the cache's
    assert out["magic"][1] == other["NUMBA_CPU_NAME"]
    assert tuple(out["magic"]) not in built
    assert out["warm_compiled"] == [], f"compiled on first use: {out['warm_compiled']}"
    assert out["loaded"] >= out["entries"] > 0  # the group's signatures came from disk
    assert out["registries"] == [], f"loading imported {out['registries']}"
    assert out["after"] == ["sparkxml_kernels.gbt.splitting._soft"]
    # what it compiled was saved under its own key, beside the build's entries
    assert tuple(out["magic"]) in _index_magics(cache)


def test_precompile_rejects_unknown_target():
    from sparkxml_kernels import precompile

    with pytest.raises(ValueError, match="unknown precompile target"):
        precompile.precompile(["gbt"], targets=["pentium-pro"])
