"""The benchmarks' shared harness: one Spark session builder, one load-average reader, one
quiet-machine check, timing helpers, and the results JSON that ``docs/benchmarks.rst``'s
"Results recorded by the harness" tables are built from (``benchmarks/report.py``).

Usage (a script in ``benchmarks/`` imports it as ``_harness``: its own directory is on
``sys.path`` when run as ``python benchmarks/X.py``)::

    from _harness import Results, best_of, session, timed

    res = Results("gbt_synthetic")  # prints the 1-minute load and the label: quiet or under load
    spark = session(master="local[2]", app="gbt-benchmark", conf={"spark.driver.memory": "6g"})
    with timed("fit") as t:
        model = GBTClassifier(maxIter=100).fit(df)
    res.add("sparkxml GBTClassifier", "fit", t.seconds, "s")
    res.add("xgboost native hist", "fit", best_of(lambda: xgb.train(params, dm, 100), 3), "s")
    res.write()  # -> benchmarks/results/gbt_synthetic.json, then: python benchmarks/report.py

What an entry records: ``benchmark``, ``case``, ``metric``, ``value``, ``unit``, ``command``
(``sys.argv`` joined), ``commit`` (``git rev-parse --short HEAD``, ``-dirty`` when tracked files
differ from it), ``date`` (UTC, ISO 8601), ``machine`` (cores, CPU model, memory),
``load_before`` (the 1-minute load average of the quiet check before the timed section),
``load_after`` (when the entry was added) and ``quiet`` (``load_before`` below the limit,
1.5 by default). A figure taken under load is still recorded, labelled ``quiet: false``; the
check never refuses to run, it says so (on stderr, so that the scripts' own stdout stays as
it was). ``write`` merges into the JSON file: an entry replaces the earlier one of the same
case and metric, others are kept.

``SPARKXML_BENCH_RESULTS`` (a directory) moves the JSON files elsewhere; ``SPARKXML_BENCH_WAIT``
(seconds) makes the quiet check wait up to that long for the load to fall below the limit.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Iterator

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS_DIR = os.path.join(HERE, "results")
QUIET_LIMIT = 1.5

# What every benchmark session sets (the configs the scripts used): no UI, no progress bars,
# Arrow for pandas conversions, few shuffle partitions on a small local master.
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.shuffle.partitions": "8",
}


# ------------------------------------------------------------------------------ session
def session(master: str = "local[2]", app: str = "sparkxml-bench", conf: dict | None = None,
            log_level: str | None = "ERROR"):
    """A local SparkSession on ``master`` for a benchmark.

    Python workers (and the driver, unless set) run this interpreter (``PYSPARK_PYTHON`` =
    ``sys.executable``), so they import the same packages. ``conf`` is laid over
    :data:`BASE_CONF`; a value of ``None`` drops a base key. ``log_level``: the SparkContext's
    log level (``None``: leave Spark's default).
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    merged = dict(BASE_CONF)
    merged.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app)
    for k, v in merged.items():
        if v is not None:
            builder = builder.config(k, str(v))
    spark = builder.getOrCreate()
    if log_level:
        spark.sparkContext.setLogLevel(log_level)
    return spark


# ------------------------------------------------------------------------------ source trees
def source_trees(ap, values) -> list:
    """``[(label, absolute dir), ...]`` from ``--tree LABEL=DIR`` values (at least two; the
    A/B scripts compare source trees, e.g. ``git archive`` copies of two commits); an argparse
    error otherwise."""
    trees = [v.split("=", 1) for v in values]
    if len(trees) < 2 or any(len(t) != 2 for t in trees):
        ap.error("give --tree LABEL=DIR at least twice")
    return [(label, os.path.abspath(path)) for label, path in trees]


def tree_env(path: str, own_cache: bool = False) -> dict:
    """This environment with ``PYTHONPATH`` on the source tree ``path`` (its ``sparkxml`` and
    its ``jvm-free-udfs``); ``own_cache``: without the numba cache variables, so that the tree
    uses the cache inside its own package."""
    drop = ("SPARKXML_NUMBA_CACHE_DIR", "NUMBA_CACHE_DIR") if own_cache else ()
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = os.pathsep.join([path, os.path.join(path, "jvm-free-udfs")])
    return env


# ------------------------------------------------------------------------------ load
def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15-minute load averages (``os.getloadavg``; zeros where unavailable)."""
    try:
        return os.getloadavg()
    except OSError:  # pragma: no cover - not on this platform
        return (0.0, 0.0, 0.0)


class QuietCheck:
    """The outcome of :func:`quiet_check`: ``load_before``, ``limit``, ``quiet``, ``label``."""

    def __init__(self, load_before: float, limit: float):
        self.load_before = float(load_before)
        self.limit = float(limit)
        self.quiet = self.load_before < self.limit

    @property
    def label(self) -> str:
        return "quiet" if self.quiet else "under load"

    def __repr__(self) -> str:
        return f"QuietCheck(load_before={self.load_before:.2f}, {self.label})"


def quiet_check(limit: float = QUIET_LIMIT, wait: float | None = None, poll: float = 10.0,
                stream=None) -> QuietCheck:
    """Record the 1-minute load average before a timed section.

    Waits up to ``wait`` seconds (default: ``SPARKXML_BENCH_WAIT``, else 0) for it to fall
    below ``limit``; then prints the load and the label ("quiet", or "under load" when it is
    still at or above the limit) to ``stream`` (stderr) and returns a :class:`QuietCheck`.
    It never refuses to go on: a run under load is labelled as such.
    """
    if wait is None:
        wait = float(os.environ.get("SPARKXML_BENCH_WAIT", "0") or 0)
    deadline = time.monotonic() + max(0.0, wait)
    load = load_average()[0]
    while load >= limit and time.monotonic() < deadline:
        time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
        load = load_average()[0]
    check = QuietCheck(load, limit)
    msg = (f"[harness] 1-minute load average {load:.2f} before timing (limit {limit:g}): "
           + ("quiet" if check.quiet else "UNDER LOAD -- the figures of this run are recorded "
              "and labelled 'under load'"))
    print(msg, file=stream or sys.stderr, flush=True)
    return check


# ------------------------------------------------------------------------------ timing
class Timer:
    """What :func:`timed` yields: ``seconds`` (wall) and ``cpu`` (this process) once done."""

    def __init__(self, name: str | None):
        self.name, self.seconds, self.cpu = name, float("nan"), float("nan")


@contextlib.contextmanager
def timed(name: str | None = None) -> Iterator[Timer]:
    """``with timed("fit") as t: ...``; then ``t.seconds`` (perf_counter) and ``t.cpu``
    (process_time) of the block."""
    t = Timer(name)
    w0, c0 = time.perf_counter(), time.process_time()
    try:
        yield t
    finally:
        t.seconds, t.cpu = time.perf_counter() - w0, time.process_time() - c0


def best_of(fn: Callable[[], Any], repeats: int) -> float:
    """The fastest wall time of ``repeats`` calls of ``fn`` (seconds)."""
    best = float("inf")
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


# ------------------------------------------------------------------------------ provenance
def git_commit(root: str = ROOT) -> str:
    """``git rev-parse --short HEAD`` of the checkout, ``-dirty`` when tracked files differ
    (the results directory itself aside); "unknown" outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", root, "status", "--porcelain",
                                 "--untracked-files=no", "--", ".",
                                 ":(exclude)benchmarks/results"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if status else "")


def machine() -> dict:
    """Cores (``nproc``: the CPUs this process may use), CPU model and memory of the host."""
    try:
        nproc = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        nproc = os.cpu_count() or 1
    model, mem = "unknown", None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:  # pragma: no cover
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = round(int(line.split()[1]) / 2**20, 1)
                    break
    except OSError:  # pragma: no cover
        pass
    return {"nproc": nproc, "cpu": model, "memory_gib": mem}


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


# ------------------------------------------------------------------------------ results
class Results:
    """The entries of one benchmark run, written to ``benchmarks/results/<benchmark>.json``.

    Constructing it runs :func:`quiet_check` (unless ``check`` is given: a
    :class:`QuietCheck`, or ``False`` to skip it, e.g. in a child process that only measures);
    :meth:`add` records an entry against the latest check (:meth:`check_quiet` takes a new
    one before a later timed section); :meth:`write` merges the entries into the file.
    """

    def __init__(self, benchmark: str, limit: float = QUIET_LIMIT, wait: float | None = None,
                 check: QuietCheck | bool | None = None, results_dir: str | None = None):
        self.benchmark = benchmark
        self.limit = limit
        self.results_dir = (results_dir or os.environ.get("SPARKXML_BENCH_RESULTS")
                            or RESULTS_DIR)
        self.entries: list[dict] = []
        self.command = " ".join(sys.argv)
        self.check: QuietCheck | None
        if isinstance(check, QuietCheck):
            self.check = check
        elif check is False:
            self.check = None
        else:
            self.check = quiet_check(limit, wait)
        self._commit: str | None = None
        self._machine: dict | None = None

    @property
    def path(self) -> str:
        return os.path.join(self.results_dir, f"{self.benchmark}.json")

    def check_quiet(self, wait: float | None = None) -> QuietCheck:
        """A new quiet check before the next timed section; later entries refer to it."""
        self.check = quiet_check(self.limit, wait)
        return self.check

    def add(self, case: str, metric: str, value, unit: str = "", load_before: float | None = None,
            note: str | None = None) -> dict:
        """Record ``value`` (a number; ``None`` or NaN when not measured) of ``metric`` for
        ``case``. ``load_before``: the 1-minute load before this figure's timed section when
        the script read it itself (default: the latest quiet check's)."""
        if self._commit is None:
            self._commit, self._machine = git_commit(), machine()
        if load_before is None:
            load_before = self.check.load_before if self.check else load_average()[0]
        try:
            v = float(value) if value is not None else None
            if v is not None and v != v:  # NaN: not measured
                v = None
        except (TypeError, ValueError):
            v = value
        entry = {"benchmark": self.benchmark, "case": str(case), "metric": str(metric),
                 "value": v, "unit": unit, "command": self.command, "commit": self._commit,
                 "date": _utc_now(), "machine": self._machine,
                 "load_before": round(float(load_before), 2),
                 "load_after": round(load_average()[0], 2),
                 "quiet": bool(float(load_before) < self.limit)}
        if note:
            entry["note"] = note
        self.entries.append(entry)
        return entry

    def write(self) -> str | None:
        """Merge this run's entries into the benchmark's JSON file (an entry replaces one
        of the same case and metric); prints where, with the run's label. The path, or
        ``None`` when nothing was recorded."""
        if not self.entries:
            return None
        old: list[dict] = []
        if os.path.exists(self.path):
            with open(self.path) as f:
                old = json.load(f).get("entries", [])
        new = {(e["case"], e["metric"]): e for e in self.entries}
        merged = [new.pop((e["case"], e["metric"]), e) for e in old]
        merged += list(new.values())
        os.makedirs(self.results_dir, exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"benchmark": self.benchmark, "entries": merged}, f, indent=1)
            f.write("\n")
        os.replace(tmp, self.path)
        under = sum(not e["quiet"] for e in self.entries)
        print(f"[harness] {len(self.entries)} entries -> {self.path}"
              + (f" ({under} labelled under load)" if under else " (quiet)")
              + "; docs: python benchmarks/report.py", file=sys.stderr, flush=True)
        return self.path
