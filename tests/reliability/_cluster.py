"""A real Spark standalone cluster for the tests: a master and two one-core workers started
from the pyspark installation's ``bin/spark-class`` (``SPARK_HOME`` = the pyspark package),
each worker launching one executor JVM of its own for an application; ``spark-submit`` runs a
driver script on it. Every JVM runs in a process group of its own (with the executors and
Python workers it starts), so :meth:`Cluster.stop` leaves nothing behind, whatever failed.

Faults come from outside, as an operator or the kernel's OOM killer would inflict them:
SIGKILL of an executor JVM (found as the ``CoarseGrainedExecutorBackend`` child of a worker)
or of a worker JVM. :class:`Submission` follows the driver's log (this module's log4j2
configuration: WARN, plus the scheduler's INFO lines that say when a barrier stage's tasks are
launched and when a task finishes or an executor is lost) so a test can strike at a chosen
moment; the driver script writes marker lines into the same log through its JVM's log4j
(``ARM <name>``, ``DONE <name>``), in order with the scheduler's lines.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from _jvm import JVM_OPTIONS

START_S = 240  # the JVMs' start on a loaded 2-core machine (seconds, not minutes, when quiet)
MARKER_LOGGER = "sparkxml.clustertest"

LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.sched.name = org.apache.spark.scheduler.TaskSchedulerImpl
logger.sched.level = info
logger.tsm.name = org.apache.spark.scheduler.TaskSetManager
logger.tsm.level = info
logger.dag.name = org.apache.spark.scheduler.DAGScheduler
logger.dag.level = info
logger.mark.name = {marker}
logger.mark.level = info
""".replace("{marker}", MARKER_LOGGER)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of ``pid``'s direct children."""
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(entry), cmd))
    return out


def _killpg(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left of it."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        try:  # the leader is gone; its children (executors, Python daemons) may not be
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return


class Cluster:
    """A master and ``n_workers`` workers (``cores`` each) under ``tmp``; :meth:`stop` in a
    ``finally``."""

    def __init__(self, tmp, n_workers: int = 2, cores: int = 1, memory: str = "1g"):
        import pyspark

        self.home = os.path.dirname(os.path.abspath(pyspark.__file__))
        self.tmp = tmp
        (tmp / "log4j2.properties").write_text(LOG4J)
        (tmp / "local").mkdir(exist_ok=True)
        self.env = dict(os.environ, SPARK_HOME=self.home, PYSPARK_PYTHON=sys.executable,
                        PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
                        SPARK_NO_DAEMONIZE="1", SPARK_DAEMON_MEMORY="384m",
                        SPARK_DAEMON_JAVA_OPTS=JVM_OPTIONS,
                        SPARK_LOCAL_DIRS=str(tmp / "local"))
        self.port, self.webui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.n_workers, self.cores, self.memory = n_workers, cores, memory
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []

    # ------------------------------------------------------------------ life cycle
    def _spawn(self, args, log) -> subprocess.Popen:
        with open(self.tmp / log, "w") as out:
            proc = subprocess.Popen([os.path.join(self.home, "bin", "spark-class")] + args,
                                    env=self.env, start_new_session=True, stdout=out,
                                    stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def start_worker(self, i: int) -> subprocess.Popen:
        proc = self._spawn(["org.apache.spark.deploy.worker.Worker", self.url, "--host",
                            "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                            "--webui-port", str(free_port()),
                            "--work-dir", str(self.tmp / f"work{i}")], f"worker{i}.log")
        if i < len(self.workers):
            self.workers[i] = proc
        else:
            self.workers.append(proc)
        return proc

    def start(self) -> "Cluster":
        self._spawn(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                     str(self.port), "--webui-port", str(self.webui)], "master.log")
        for i in range(self.n_workers):
            self.start_worker(i)
        self.wait_workers(self.n_workers)
        return self

    def state(self) -> dict:
        """The master's JSON state (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui}/json/", timeout=5) as r:
            return json.loads(r.read())

    def wait_workers(self, n: int, timeout_s: float = START_S) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if sum(w["state"] == "ALIVE" for w in self.state()["workers"]) >= n:
                    return
            except OSError:
                pass
            dead = [p.args[1] for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise AssertionError(
                    f"the cluster did not start in {timeout_s} s (exited: {dead}); master log: "
                    + (self.tmp / "master.log").read_text()[-2000:])
            time.sleep(0.5)

    def stop(self) -> None:
        """Kill every process group started here (drivers, workers with their executors and
        Python daemons, the master) and remove the work and scratch directories (logs stay)."""
        for proc in reversed(self.procs):
            _killpg(proc)
        for i in range(self.n_workers):  # keep the executors' logs: work{i}/<app>/<id>/stderr
            for log in (self.tmp / f"work{i}").glob("*/*/stderr"):
                shutil.copy(log, self.tmp / f"executor-{i}-{log.parent.name}.log")
        for d in [self.tmp / "local"] + [self.tmp / f"work{i}" for i in range(self.n_workers)]:
            shutil.rmtree(d, ignore_errors=True)

    # ------------------------------------------------------------------ faults
    def executor_pids(self, i: int) -> list[int]:
        """Executor JVMs that worker ``i`` runs now."""
        return [pid for pid, cmd in _children(self.workers[i].pid)
                if "CoarseGrainedExecutorBackend" in cmd]

    def kill_executor(self, i: int) -> int:
        """SIGKILL worker ``i``'s executor JVM; return its pid."""
        pids = self.executor_pids(i)
        assert len(pids) == 1, f"worker {i} runs executors {pids}, expected one"
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def kill_worker(self, i: int) -> int:
        """SIGKILL worker ``i``'s JVM (its executor notices the lost worker and exits)."""
        pid = self.workers[i].pid
        os.kill(pid, signal.SIGKILL)
        return pid

    # ------------------------------------------------------------------ applications
    def submit(self, script, args, log, conf=None, ui_port=None) -> "Submission":
        """Start ``spark-submit script args`` on the cluster (client mode); its output (the
        driver's log, this module's log4j2 configuration) goes to ``tmp/log``."""
        # The driver and executors keep HotSpot's full JIT, unlike the master and workers
        # (tests/_jvm.py): they convert the prediction frame (_cluster_driver.BIG_ROWS rows)
        # to and from Arrow, hot code that C1 alone ran 3-4x slower (one model's transform
        # of 80,000 rows on local[2]: 2.0-2.6 s with C2, 7.5-8.0 s with C1 only).
        java_opts = f"-Dlog4j2.configurationFile=file:{self.tmp / 'log4j2.properties'}"
        settings = {"spark.executor.memory": "768m", "spark.driver.memory": "1g",
                    "spark.executor.cores": "1", "spark.cores.max": str(self.n_workers),
                    "spark.sql.shuffle.partitions": "4", "spark.ui.showConsoleProgress": "false",
                    "spark.driver.extraJavaOptions": java_opts,
                    "spark.executor.extraJavaOptions": java_opts,
                    "spark.ui.enabled": "false" if ui_port is None else "true",
                    **({"spark.ui.port": str(ui_port)} if ui_port else {}), **(conf or {})}
        cmd = [os.path.join(self.home, "bin", "spark-submit"), "--master", self.url]
        for k, v in settings.items():
            cmd += ["--conf", f"{k}={v}"]
        cmd += [str(script)] + [str(a) for a in args]
        with open(self.tmp / log, "w") as out:
            proc = subprocess.Popen(cmd, env=self.env, start_new_session=True, stdout=out,
                                    stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return Submission(proc, self.tmp / log)


class Submission:
    """A running ``spark-submit``: follow its log line by line, wait for it with a deadline."""

    def __init__(self, proc: subprocess.Popen, log):
        self.proc, self.log = proc, log
        self._f = open(log, "rb")
        self._partial = b""

    def lines(self):
        """The log's new complete lines since the last call."""
        data = self._partial + self._f.read()
        *done, self._partial = data.split(b"\n")
        return [x.decode(errors="replace") for x in done]

    def follow(self, deadline: float, poll_s: float = 0.02):
        """Yield log lines as they come until the driver exits (then the rest) or the
        deadline passes (then raise)."""
        while True:
            exited = self.proc.poll() is not None
            yield from self.lines()
            if exited:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("spark-submit still running at its deadline; log tail:\n"
                                   + self.tail())
            time.sleep(poll_s)

    def tail(self, n: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-n:]

    def close(self):
        self._f.close()


BARRIER_LAUNCHED = re.compile(r"Successfully scheduled all the (\d+) tasks for barrier stage "
                              r"(\d+)")
TASK_FINISHED = re.compile(r"Finished task \S+ in stage (\d+)\.(\d+)")
MARK = re.compile(MARKER_LOGGER.replace(".", r"\.").rsplit(".", 1)[-1] + r": (ARM|DONE) (\S+)")
