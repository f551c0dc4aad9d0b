"""The numba kernels' one door (``sparkxml_kernels._jit``), the shipped cache it locates, and
the recorded warm-up list (``_warm_signatures.txt``) that ``precompile`` compiles."""
import importlib
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import sparkxml_kernels
from sparkxml_kernels import _jit, precompile

PKG = _jit.PACKAGE_DIR

# Kernels that no recorded fit (sparkxml/_warmup_record.py's profiles) compiles: each is
# compiled where it is first called, as without precompile. Kernels made with
# inline="always" are not listed: numba inlines them into their callers' IR and never
# compiles them on their own, so warming the callers warms them.
NOT_WARMED = {
    # serving API only: FastXMLPredictor.apply (leaf ids); no estimator calls it
    "sparkxml_kernels.fastxml.predictor.apply_kernel",
    # routing binned rows through a finished tree: evaluation sets (validationIndicatorCol)
    # DART and rows left out of a tree (subsamplingRate), which the gbt profiles do not use
    "sparkxml_kernels.gbt.binned._route_generic",
    "sparkxml_kernels.gbt.partition._route_binned",
    # partitions of sparse binned rows by category sets, and their bin look-up (also used by
    # _route_generic): the recorded categorical profile bins dense
    "sparkxml_kernels.gbt.binned._partition_generic",
    "sparkxml_kernels.gbt.binned._sparse_bin",
    "sparkxml_kernels.gbt.binned._goes_left",
    # binning a scipy CSR matrix with bin_data (kernel-level API; Spark tasks bin sparse
    # vectors through gbt.binned)
    "sparkxml_kernels.binning._bin_csr",
    # row-major partition kernels: the grower passes partition_nodes the column copy, so fits
    # run _partition_cols*; these serve kernel-level callers without one
    "sparkxml_kernels.gbt.partition._partition_nodes",
    "sparkxml_kernels.gbt.partition._partition_nodes_parallel",
    # leaf indices (leafCol) of a model with categorical splits
    "sparkxml_kernels.gbt.predictor._predict_leaves_cat",
    # forests' exact (level-split) histogram sums, the regression objectives' gradients and
    # leaf quantiles: the recorded profiles (forest classification, squared-error GBT) do not
    # reach them; they compile on first use
    "sparkxml_kernels.forest.histogram._build_levels",
    "sparkxml_kernels.gbt.leaf_quantile._byte_hist",
    "sparkxml_kernels.gbt.objectives._grad_kernel",
    # LambdaMART's xendcg and map objectives: the recorded ranking profile trains lambdarank
    "sparkxml_kernels.gbt.ranking_xendcg._xendcg_kernel",
    "sparkxml_kernels.gbt.ranking_map._map_kernel",
    # FM relation blocks (relationCols): the recorded fm profile fits flat vectors
    "sparkxml_kernels.fm.relation._gather_rows",
    "sparkxml_kernels.fm.relation._aggregates",
    "sparkxml_kernels.fm.relation._block_update",
    "sparkxml_kernels.fm.relation._push_rows",
    # FFM's coordinate solvers (solver "als" / "mcmc"): the recorded ffm profile trains adagrad
    "sparkxml_kernels.fm.ffm_cd.ffm_factor_cache",
    # the tree grown in scikit-learn's summation order (kernel-level API; no estimator
    # calls it)
    "sparkxml_kernels.forest.ordered._sift_down",
    "sparkxml_kernels.forest.ordered._heapsort",
    "sparkxml_kernels.forest.ordered._median3",
    "sparkxml_kernels.forest.ordered._insertion",
    "sparkxml_kernels.forest.ordered.introsort3",
    "sparkxml_kernels.forest.ordered.node_sums",
    "sparkxml_kernels.forest.ordered._update",
    "sparkxml_kernels.forest.ordered._reset",
    "sparkxml_kernels.forest.ordered._gather_sorted",
    "sparkxml_kernels.forest.ordered._rotate",
    "sparkxml_kernels.forest.ordered.split_node_ordered",
    "sparkxml_kernels.forest.ordered._sequential_sum",
}


def _modules():
    names = ["sparkxml_kernels"]
    for m in pkgutil.walk_packages(sparkxml_kernels.__path__, "sparkxml_kernels."):
        names.append(m.name)
    return [importlib.import_module(n) for n in names]


def _all_dispatchers():
    from numba.core.registry import CPUDispatcher

    out = {}
    for mod in _modules():
        for v in vars(mod).values():
            if isinstance(v, CPUDispatcher) and v.py_func.__module__ == mod.__name__:
                out[id(v)] = v
    return list(out.values())


def test_no_kernel_bypasses_jit_in_the_sources():
    pat = re.compile(r"numba\.(njit|jit|vectorize|guvectorize|cfunc)\b|from numba import[^\n]*"
                     r"\b(njit|jit|vectorize|guvectorize|cfunc)\b|^\s*@jit\b", re.M)
    bad = []
    for root, _, files in os.walk(PKG):
        for f in files:
            p = os.path.join(root, f)
            if f.endswith(".py") and os.path.realpath(p) != os.path.realpath(_jit.__file__):
                with open(p) as fh:
                    if pat.search(fh.read()):
                        bad.append(os.path.relpath(p, PKG))
    assert not bad, f"these files make numba kernels without sparkxml_kernels._jit: {bad}"


def test_every_dispatcher_was_made_by_jit_and_is_cached():
    ds = _all_dispatchers()
    assert len(ds) > 150  # the package's kernels were found at all
    made = {id(k) for k in _jit.KERNELS}
    bad = [f"{d.py_func.__module__}.{d.py_func.__qualname__}" for d in ds if id(d) not in made]
    assert not bad, f"kernels not made by _jit.njit: {bad}"
    for d in ds:
        assert d.targetoptions.get("nogil") is not None
        assert type(d._cache._impl.locator).__name__ == "ContentStampedLocator", d
        assert type(d._cache) is _jit._TieredCache, d  # loads the build's portable entries


def test_jit_refuses_uncached_kernels():
    with pytest.raises(ValueError, match="cache=False"):
        _jit.njit(cache=False)


def test_every_kernel_is_warmed_or_listed_as_not_warmed():
    listed = {(m, q) for _, m, q, _ in precompile.read_manifest()}
    missing, both = [], []
    for d in _all_dispatchers():
        key = (d.py_func.__module__, d.py_func.__qualname__)
        name = f"{key[0]}.{key[1]}"
        if d.targetoptions.get("inline") == "always":
            continue
        if key not in listed and name not in NOT_WARMED:
            missing.append(name)
        if key in listed and name in NOT_WARMED:
            both.append(name)
    assert not missing, ("kernels no recorded fit compiles: rerun `python -m "
                         f"sparkxml._core.warmup_record` or add them to NOT_WARMED: {missing}")
    assert not both, f"in NOT_WARMED but warmed: {both}"


def test_manifest_lines_name_existing_kernels_and_parse():
    entries = precompile.read_manifest()
    assert len(entries) > 100
    groups = {g for g, _, _, _ in entries}
    assert {"fastxml", "gbt", "gbt_threads", "linear", "fm", "forest"} <= groups
    for _, module, qualname, sig in entries:
        assert precompile.dispatchers(module, qualname), (module, qualname)
        assert isinstance(precompile.parse_signature(sig), tuple)


def test_signature_bool_is_numbas_boolean_under_any_numpy():
    # reprs say "bool"; numba binds types.bool only with numpy 2, and CI's pyspark 3.5 leg
    # runs numpy 1, where the name fell through to Python's bool and precompile failed
    from numba.core import types

    from sparkxml_kernels.precompile import parse_signature

    sig = parse_signature("(Array(float64, 1, 'C', False, aligned=True), bool)")
    assert sig[1] is types.boolean
    assert parse_signature("(Literal[bool](True),)")[0] == types.literal(True)


def test_precompile_rejects_unknown_group_and_bad_jobs():
    with pytest.raises(ValueError, match="unknown precompile group"):
        precompile.precompile(["nope"])
    with pytest.raises(ValueError, match="jobs"):
        precompile.precompile(["gbt"], jobs=0)


_LOAD = textwrap.dedent("""
    import json
    from sparkxml_kernels import _jit, precompile
    th = precompile.warm_async("linear")  # what a task started, still loading
    precompile.load_kernels("linear")     # waits for that thread, starts no second one
    names = {e[2] for e in precompile.read_manifest(groups={"linear"})}
    loaded = [d for d in _jit.KERNELS if d.py_func.__name__ in names and d.signatures]
    print(json.dumps(dict(alive=th.is_alive(), again=precompile.warm_async("linear") is None,
                          loaded=len(loaded))))
""")


def test_load_kernels_waits_for_the_loading_a_task_started():
    out = subprocess.run([sys.executable, "-c", _LOAD], capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, SPARKXML_WARMUP="1"))
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r == dict(alive=False, again=True, loaded=r["loaded"]) and r["loaded"] >= 5, r


_CALL = textwrap.dedent("""
    import os, sys, numpy as np
    import sparkxml_kernels
    from sparkxml_kernels import _jit
    from sparkxml_kernels.gbt.splitting import _soft
    assert sparkxml_kernels.__file__.startswith(sys.argv[1]), sparkxml_kernels.__file__
    assert _soft(3.0, 1.0) == 2.0
    sig = _soft.signatures[0]
    print(_jit.cache_dir(), _soft.stats.cache_hits[sig], _soft.stats.cache_misses[sig])
""")


def _copy_package(dst):
    """The package's sources only (no cache), with fresh mtimes (what an install does)."""
    shutil.copytree(PKG, os.path.join(dst, "sparkxml_kernels"), copy_function=shutil.copyfile,
                    ignore=shutil.ignore_patterns("__pycache__", "_numba_cache"))


def _run(root):
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARKXML_NUMBA_CACHE_DIR", "NUMBA_CACHE_DIR")}
    env["PYTHONPATH"] = root
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run([sys.executable, "-c", _CALL, root], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    where, hits, misses = out.stdout.split()
    return where, int(hits), int(misses)


def test_cache_written_in_one_directory_is_accepted_after_a_copy_with_new_mtimes(tmp_path):
    a, b, c = (str(tmp_path / x) for x in "abc")
    _copy_package(a)
    where, hits, misses = _run(a)
    assert where == os.path.join(a, "sparkxml_kernels", "_numba_cache")
    assert (hits, misses) == (0, 1)
    # b: an "installed" copy: other path, every file rewritten (new mtimes), cache carried
    _copy_package(b)
    shutil.copytree(os.path.join(a, "sparkxml_kernels", "_numba_cache"),
                    os.path.join(b, "sparkxml_kernels", "_numba_cache"))
    for root, _, files in os.walk(b):
        for f in files:
            os.utime(os.path.join(root, f), (1e9, 1e9))
    assert _run(b)[1:] == (1, 0)
    # c: the same, but another module changed (a callee could have): the cache is retired
    shutil.copytree(os.path.join(b, "sparkxml_kernels"), os.path.join(c, "sparkxml_kernels"))
    with open(os.path.join(c, "sparkxml_kernels", "metrics.py"), "a") as f:
        f.write("\n# changed\n")
    assert _run(c)[1:] == (0, 1)
