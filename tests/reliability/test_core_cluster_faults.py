"""Faults on a real Spark standalone cluster (a master and two one-core workers, each running
one executor JVM; see ``_cluster.py``), inflicted from outside with SIGKILL while one
``spark-submit`` application (``_cluster_driver.py``) runs:

* GBT, LinearSVC, RandomForest, FM and FastXML (its distributed mode, whose top levels grow in
  a barrier stage, and its default replicated mode, fitted without faults) fit on the cluster
  and equal the models the test's ``local[2,4]`` session fits, bit for bit;
* during the fits of ``FAULT_FITS``, one executor JVM is killed as soon as the scheduler has
  launched the fit's barrier stage. The stage fails, the master relaunches an executor on the
  same worker, the stage runs again, and the model is still the local one;
* one worker JVM is killed after the first task of a job that predicts 24,000 generated rows
  with all five models has finished (its executor exits with it). The lost tasks run again
  on the other executor, and the predictions equal those of the same job run clean, bit for
  bit.

One cluster and one application do all of it. Every wait is bounded: the JVMs' start, each
fault's arrival and the driver as a whole; the cluster's process groups are killed and its
directories removed whatever happens.
"""
import json
import os
import sys
import time

import pyarrow.feather as feather
import pytest
from _cluster import BARRIER_LAUNCHED, MARK, TASK_FINISHED, Cluster
from _cluster_driver import BIG_ROWS, assert_same_model, fit_all

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = ["gbt", "svc", "forest", "fm", "fastxml"]
# Each executor kill costs one or two executor relaunches (a JVM start and the Python
# workers' imports: most of this test's time on 2 cores). By default an executor is killed in
# the GBT fit (whose barrier stage, ``sparkxml._core.barrier``, LinearSVC, RandomForest and FM
# share) and the FastXML fit (its own barrier stage), the other three fitting unharmed on the
# same cluster; SPARKXML_CLUSTER_TESTS=all kills in all five fits, and =0 skips the file (it
# needs the JVMs' ports on loopback and minutes of CPU).
_MODE = os.environ.get("SPARKXML_CLUSTER_TESTS", "1")
FAULT_FITS = FAMILIES if _MODE == "all" else ["gbt", "fastxml"]
pytestmark = pytest.mark.skipif(
    _MODE == "0", reason="SPARKXML_CLUSTER_TESTS=0 skips the standalone-cluster tests")
# Bound on the whole application, faults included (a few minutes on a 2-core machine): a
# hang fails the test here instead of eating CI's time. A busy shared machine may need more.
DRIVER_S = float(os.environ.get("SPARKXML_CLUSTER_DEADLINE_S", "600"))


def _run_faults(cluster, sub, deadline):
    """Follow the driver's log and strike: an executor of worker (i % 2) at the barrier stage
    of the i-th armed fit, worker 1 after the first finished task of the armed transform.
    Returns what happened, per armed step."""
    events, armed, step = {}, None, 0
    for line in sub.follow(deadline):
        m = MARK.search(line)
        if m:
            kind, name = m.groups()
            if kind == "ARM":
                armed = name
                events[name] = {"armed_at": time.monotonic(), "launches": {}}
            else:
                events.setdefault(name, {})["done_at"] = time.monotonic()
                armed = None
            continue
        if armed is None:
            continue
        ev = events[armed]
        m = BARRIER_LAUNCHED.search(line)
        if m and armed.startswith("fit-"):
            stage = int(m.group(2))
            ev["launches"][stage] = ev["launches"].get(stage, 0) + 1
            if "killed" not in ev:
                worker = step % 2
                step += 1
                ev["killed"] = {"executor_pid": cluster.kill_executor(worker), "worker": worker,
                                "stage": stage, "at": time.monotonic()}
            continue
        if armed == "transform":
            if "killed" not in ev and TASK_FINISHED.search(line):
                ev["killed"] = {"worker_pid": cluster.kill_worker(1), "at": time.monotonic()}
            elif "killed" in ev and ("Lost executor" in line or "Executor lost" in line):
                ev.setdefault("lost", []).append(line)
    return events


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster_faults")
    out = tmp / "out"
    cluster = Cluster(tmp)
    t0 = time.monotonic()
    try:
        cluster.start()
        t_start = time.monotonic() - t0
        sub = cluster.submit(os.path.join(HERE, "_cluster_driver.py"),
                             [out, ",".join(FAULT_FITS)], "driver.log")
        try:
            events = _run_faults(cluster, sub, time.monotonic() + DRIVER_S)
        finally:
            sub.close()
        assert sub.proc.returncode == 0, sub.tail()
        with open(out / "times.json") as f:
            times = json.load(f)
        print(f"\ncluster faults: cluster up in {t_start:.1f} s, application "
              f"{time.monotonic() - t0 - t_start:.1f} s, driver times "
              + ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
              + f"; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
        yield {"out": out, "events": events, "times": times, "log": sub.log}
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def local_models(spark):
    models = fit_all(spark, fastxml_mode="distributed")
    models["fastxml-replicated"] = fit_all(spark, only=["fastxml"])["fastxml"]
    return models


@pytest.mark.parametrize("name", FAMILIES + ["fastxml-replicated"])
def test_every_family_fits_on_the_cluster_as_on_local(faults, local_models, name):
    """Each model saved by the cluster's driver equals the local[2,4] one, bit for bit
    (for the families in FAULT_FITS, after an executor was killed during the fit)."""
    local = local_models[name]
    assert_same_model(name, type(local).load(str(faults["out"] / name)), local)


@pytest.mark.parametrize("name", FAULT_FITS)
def test_executor_killed_in_the_barrier_stage_gives_the_local_model(faults, local_models,
                                                                     name):
    ev = faults["events"][f"fit-{name}"]
    killed = ev.get("killed")
    assert killed, f"{name}: no barrier stage was launched during the fit"
    # the stage the kill hit was launched again (on the relaunched executor) and completed
    assert ev["launches"][killed["stage"]] >= 2, (ev, faults["log"].read_text()[-4000:])
    assert ev["done_at"] > killed["at"]
    local = local_models[name]
    assert_same_model(name, type(local).load(str(faults["out"] / name)), local)


def test_worker_killed_during_transform_gives_the_same_predictions(faults):
    ev = faults["events"]["transform"]
    assert "killed" in ev, "no task of the transform job finished before it ended"
    assert ev.get("lost"), "the driver never noticed the lost executor"
    clean = feather.read_table(faults["out"] / "predictions-clean.arrow")
    fault = feather.read_table(faults["out"] / "predictions-transform.arrow")
    assert clean.num_rows == fault.num_rows == BIG_ROWS
    assert clean.column_names == fault.column_names
    assert len(clean.column_names) >= 6  # the id and every model's predictions
    for col in clean.column_names:
        assert clean.column(col).equals(fault.column(col)), col
