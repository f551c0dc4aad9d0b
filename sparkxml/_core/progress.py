"""Progress of long fits: Spark job groups, descriptions and tags per phase, and log lines.

Spark UI
--------
Every Spark job of a sparkxml fit runs inside ``FitProgress.phase(name)`` (phases: "checks",
"sketch", "train", "evaluate", ...), which labels it:

* classic session: the job group ``sparkxml-<Estimator>-<uid>-<n>`` (one per fit), the
  description ``sparkxml <Estimator> <uid>: <phase>`` (``SparkContext.setJobGroup``; the
  thread's previous group and description are restored after the phase) and job tags;
* Spark Connect: job tags only (``SparkSession.addTag``; the Connect server writes the
  description of every job itself, a client cannot set it);

the tags being ``sparkxml``, ``sparkxml-<Estimator>``, ``sparkxml-<phase>`` and the fit's
group id, so ``SparkSession.interruptTag(group)`` cancels one fit. Anything that fails here
(an old Spark, a session that refuses tags) is skipped: labels never fail a fit.

Log lines
---------
Logger ``sparkxml`` at INFO (configure ``logging`` to see them). With ``verbose = N > 0`` an
estimator logs each phase's time and, while training runs in an executor, one line every N
rounds (or trees), e.g. ``GBTClassifier round 10/300: train-logloss=0.412 validation-
logloss=0.433 (3.1 s)``. The lines come from the task over an authenticated socket
(``sparkxml_kernels.progress``): ``task_spec()`` opens a listener on the driver (or Connect
client) and returns the plain dict the task needs. Executors that cannot reach it log the
lines in their own log instead, and the estimator logs the history after the stage
(:meth:`FitProgress.log_rounds`).

How an estimator reports (one call per phase on the driver, one per round in the task)::

    with FitProgress(spark, self, verbose) as progress:
        with progress.phase("checks"):
            ...                                    # Spark jobs
        with progress.phase("train"):
            spec = progress.task_spec()            # plain dict, into the task closure
            ...                                    # in the task:
            #   rep = ProgressReporter(spec, rank)   (sparkxml_kernels.progress)
            #   rep.progress(i + 1, n, {"train-loss": v})    # logged every N-th
            #   rep.close()
        if not progress.live_lines:                # nothing came back during the stage
            progress.log_rounds(rows, total)       # rows: [(i, {metric: value}), ...]
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import select
import socket
import threading
import time
from contextlib import contextmanager
from multiprocessing.connection import Connection

from sparkxml._core.compat import is_connect
from sparkxml_kernels.collective.transport import handshake, set_io_timeouts
from sparkxml_kernels.progress import MAX_RECORD_BYTES, format_record

LOGGER = logging.getLogger("sparkxml")
_FIT_COUNTER = itertools.count(1)
_HANDSHAKE_TIMEOUT_S = 10.0
_LOCAL_PROPS = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


def _classic_context(spark):
    """The SparkContext of a classic session, None over Spark Connect.

    The one place sparkxml touches a SparkContext: a classic session has no other API for a
    job's description and group (both shown in the Spark UI and status tracker).
    Over Connect this returns None before any attribute access, and the labels travel as
    session tags instead; training itself never needs it."""
    if is_connect(spark):
        return None
    try:
        return spark.sparkContext
    except Exception:  # noqa: BLE001
        return None


class _Listener:
    """Driver end of the progress channel: accepts authenticated task connections and hands
    every JSON record to ``on_record``."""

    def __init__(self, on_record):
        self.authkey = os.urandom(32)
        self._on_record = on_record
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("0.0.0.0", 0))  # every interface: executors may be elsewhere
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._readers: list = []
        self._conns: list = []
        self._accept = threading.Thread(target=self._accept_loop, daemon=True,
                                        name="sparkxml-progress-accept")
        self._accept.start()

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._sock], [], [], 0.2)
                if not ready:
                    continue
                sock, _ = self._sock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._read, args=(sock,), daemon=True,
                                 name="sparkxml-progress-reader")
            self._readers.append(t)
            t.start()

    def _read(self, sock):
        try:
            # the training collective's handshake (bounded), then blocking reads until EOF
            handshake(sock, self.authkey, True, _HANDSHAKE_TIMEOUT_S)
            set_io_timeouts(sock, 0.0)
            conn = Connection(sock.detach())
            self._conns.append(conn)
            while True:
                record = json.loads(conn.recv_bytes(MAX_RECORD_BYTES).decode("utf-8"))
                if isinstance(record, dict):
                    self._on_record(record)
        except Exception:  # noqa: BLE001 - EOF, a stranger failing the challenge, garbage
            sock.close()

    def close(self, drain_s: float = 2.0):
        """Stop accepting; give connected tasks ``drain_s`` to finish sending, then close."""
        self._stop.set()
        self._accept.join(1.0)
        deadline = time.monotonic() + drain_s
        for t in list(self._readers):
            t.join(max(0.0, deadline - time.monotonic()))
        for conn in self._conns:
            try:
                conn.close()
            except OSError:
                pass
        self._sock.close()


class FitProgress:
    """One fit's labels and log lines (see the module docstring).

    Parameters
    ----------
    spark : SparkSession (classic or Connect)
    estimator : Params
        Its class name and uid name the fit.
    verbose : int
        0: no log lines (labels only); N: phase times and one line every N rounds.
    """

    def __init__(self, spark, estimator, verbose: int = 0):
        self.spark = spark
        self.name = type(estimator).__name__
        self.uid = getattr(estimator, "uid", "")
        self.verbose = int(verbose or 0)
        self.group = f"sparkxml-{self.name}-{self.uid}-{next(_FIT_COUNTER)}".replace(",", "_")
        self.live_lines = 0
        self._listener = None
        self._sc = _classic_context(spark)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    # ------------------------------------------------------------------ Spark labels
    def description(self, phase: str) -> str:
        return f"sparkxml {self.name} {self.uid}: {phase}"

    def tags(self, phase: str) -> list:
        return ["sparkxml", f"sparkxml-{self.name}", f"sparkxml-{phase}", self.group]

    @contextmanager
    def phase(self, phase: str):
        """Label the Spark jobs run inside the block; log the phase's time (verbose)."""
        restore = self._label(phase)
        t0 = time.perf_counter()
        try:
            yield self
        finally:
            restore()
            if self.verbose > 0:
                LOGGER.info(f"{self.name} {phase}: {time.perf_counter() - t0:.1f} s")

    def _label(self, phase: str):
        """Set this thread's job group, description and tags; return the undo function."""
        undo = []
        sc = self._sc
        if sc is not None:
            try:
                old = [(k, sc.getLocalProperty(k)) for k in _LOCAL_PROPS]
                sc.setJobGroup(self.group, self.description(phase))
                undo.append(lambda: [sc.setLocalProperty(k, v) for k, v in old])
            except Exception:  # noqa: BLE001
                pass
        try:
            if sc is not None:
                # membership asks the JVM set (one call a tag): iterating it ends in a
                # py4j error whose conversion cost ~15 ms a phase
                have = sc.getJobTags()
                add, remove = sc.addJobTag, sc.removeJobTag
            else:
                have = set(self.spark.getTags())
                add, remove = self.spark.addTag, self.spark.removeTag
            new = [t for t in self.tags(phase) if t not in have]
            for t in new:
                add(t)
            undo.append(lambda: [remove(t) for t in new])
        except Exception:  # noqa: BLE001 - no tags on this Spark
            pass

        def restore():
            for fn in reversed(undo):
                try:
                    fn()
                except Exception:  # noqa: BLE001
                    pass

        return restore

    # ------------------------------------------------------------------ log lines
    def task_spec(self, per_task: bool = False) -> dict | None:
        """The plain dict a task's ``ProgressReporter`` needs (None when verbose is 0):
        opens the listener on first use. ``per_task``: several tasks report their own
        counts, so the lines name the task."""
        if self.verbose <= 0:
            return None
        if self._listener is None:
            try:
                self._listener = _Listener(self._on_record)
            except OSError as e:
                LOGGER.warning(f"{self.name}: no live progress lines ({e})")
                return None
        port = self._listener.port
        return {"addresses": [f"{h}:{port}" for h in self._hosts()],
                "authkey": self._listener.authkey, "every": self.verbose,
                "source": self.name, "per_task": bool(per_task)}

    def _hosts(self) -> list:
        """Where tasks may reach this process: the driver host Spark uses (classic), this
        machine's address, and the loopback (local mode, a local Connect server)."""
        hosts = []
        if self._sc is not None:
            try:
                hosts.append(self.spark.conf.get("spark.driver.host", None))
            except Exception:  # noqa: BLE001
                pass
        try:
            hosts.append(socket.gethostbyname(socket.gethostname()))
        except OSError:
            pass
        hosts.append("127.0.0.1")
        return list(dict.fromkeys(h for h in hosts if h))

    def _on_record(self, record: dict) -> None:
        if record.get("kind") == "progress":
            self.live_lines += 1
        LOGGER.info(format_record(record))

    def log_rounds(self, rows, total: int | None = None, unit: str = "round") -> None:
        """Log ``rows`` ([(i, {metric: value}), ...], i 1-based) every ``verbose`` items and
        the last: the history of a stage whose lines did not come back live."""
        if self.verbose <= 0:
            return
        rows = list(rows)
        LOGGER.info(f"{self.name}: the tasks could not reach this process (their progress "
                    f"lines are in the executor logs); after the stage, {unit} by {unit}:")
        for i, metrics in rows:
            if i % self.verbose == 0 or i == len(rows):
                LOGGER.info(format_record({"source": self.name, "kind": "progress",
                                           "unit": unit, "done": i, "total": total,
                                           "metrics": metrics}))
