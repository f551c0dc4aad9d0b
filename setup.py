"""Build hook: an installed sparkxml carries a numba cache of its kernels (no compile on the
first fit). Everything else is configured in pyproject.toml.

After ``build_py`` has laid out the packages, ``python -m sparkxml_kernels.precompile`` runs
on that copy and writes the cache into it (``sparkxml_kernels/_numba_cache``), so the wheel
holds it. The cache is stamped with the sources' contents and keyed by the Python and numba
versions of the build and by a CPU target: ``generic`` by default (the architecture's
baseline), which every CPU of the build's architecture loads, so a wheel built once serves
machines of other CPU types (cluster workers) too. ``SPARKXML_PRECOMPILE_TARGETS="host
generic"`` also compiles for the build machine's own CPU type (``x86-64-v3`` etc. for an
x86-64 level; each target costs one more compile of every signature). Where the Python or
numba version differs, the cache is ignored and kernels compile on first use as before.

``SPARKXML_PRECOMPILE_GROUPS="fastxml gbt"`` compiles those groups only (see
``sparkxml_kernels/_warm_signatures.txt``), ``SPARKXML_PRECOMPILE_JOBS`` sets the processes.
Skipped for editable installs (``pip install -e``: tests and development compile what they
use, into the source tree's ``_numba_cache``) and when ``SPARKXML_PRECOMPILE=0``. A failure
never fails the build: it prints why, and the package is installed without the cache.
"""
import os
import subprocess
import sys
import time

from setuptools import setup
from setuptools.command.build_py import build_py


class build_py_precompile(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or \
                os.environ.get("SPARKXML_PRECOMPILE", "1") == "0":
            return
        lib = os.path.abspath(self.build_lib)
        env = {k: v for k, v in os.environ.items()
               if k not in ("SPARKXML_NUMBA_CACHE_DIR", "NUMBA_CACHE_DIR")}
        env["PYTHONPATH"] = os.pathsep.join([lib] + ([env["PYTHONPATH"]]
                                                     if env.get("PYTHONPATH") else []))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        t = time.perf_counter()
        cmd = [sys.executable, "-m", "sparkxml_kernels.precompile", "--quiet", "--build",
               "--jobs",
               os.environ.get("SPARKXML_PRECOMPILE_JOBS", str(os.cpu_count() or 1))]
        if os.environ.get("SPARKXML_PRECOMPILE_GROUPS"):  # e.g. "fastxml gbt": a shorter build
            cmd += ["--groups"] + os.environ["SPARKXML_PRECOMPILE_GROUPS"].split()
        r = subprocess.run(cmd, env=env, cwd=lib, capture_output=True, text=True)
        msg = (r.stdout + r.stderr).strip()
        print(f"sparkxml: precompile at build ({time.perf_counter() - t:.0f} s, rc "
              f"{r.returncode}): {msg[-2000:]}", file=sys.stderr)


setup(cmdclass={"build_py": build_py_precompile})
