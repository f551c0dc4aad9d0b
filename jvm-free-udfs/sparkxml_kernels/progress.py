"""Progress lines from inside a Spark task to the driver's log, while the task runs.

Training runs in executor processes (a barrier task for boosting, one task per group of trees
for FastXML), so a ``logging`` call there lands in the executor's log, not where the user
looks. The driver side (``sparkxml._core.progress.FitProgress``) therefore opens a TCP listener and
hands the task a small plain ``spec`` (in the task closure)::

    {"addresses": ["host:port", ...], "authkey": bytes, "every": N, "source": "GBTClassifier"}

and a task reports through a :class:`ProgressReporter` built from it. The reporter connects
to the first address that answers, authenticated like the training collective (the stdlib
HMAC challenge of ``multiprocessing.connection`` with a per-fit random key, both ways), and
sends one JSON object per line, framed as ``Connection.send_bytes`` frames. Sending never
blocks training: records go through a queue to a sender thread. When no address answers
(e.g. executors that cannot reach a Spark Connect client) the records are logged in the task
instead (logger ``sparkxml``, the executor's log) and the driver logs the history after the
stage.

Records: ``{"kind": "progress", "unit": "round" | "tree" | ..., "done": i, "total": n,
"metrics": {name: value}, "elapsed": seconds, "rank": r, "task": r or None}`` or
``{"kind": "message", "text": ...}``. ``spec["per_task"]`` (several tasks report, each its
own count) names the task in the lines.

Usage in a task (any estimator)::

    rep = ProgressReporter(spec, rank)          # spec None or every == 0: does nothing
    for i in range(n):
        ...
        rep.progress(i + 1, n, {"train-rmse": 0.42}, unit="round")   # every N-th is sent
    rep.close()
"""
from __future__ import annotations

import json
import logging
import queue
import socket
import threading
import time
from multiprocessing.connection import Connection

from .collective.transport import handshake, parse_address

__all__ = ["ProgressReporter", "format_record"]

LOGGER = logging.getLogger("sparkxml")
CONNECT_TIMEOUT_S = 2.0
MAX_RECORD_BYTES = 1 << 16
_CLOSE = object()


def format_record(record: dict) -> str:
    """The log line of a record: ``GBTClassifier round 10/300: train-logloss=0.41203
    validation-logloss=0.43311 (12.3 s)``, ``FastXML task 1 tree 4/25 (30.2 s)``."""
    src = record.get("source") or "sparkxml"
    if record.get("kind") == "message":
        return f"{src}: {record.get('text', '')}"
    total = record.get("total")
    done = f"{record.get('done')}/{total}" if total else f"{record.get('done')}"
    metrics = " ".join(f"{k}={v:.6g}" if isinstance(v, (int, float)) else f"{k}={v}"
                       for k, v in (record.get("metrics") or {}).items())
    el = record.get("elapsed")
    tail = f" ({el:.1f} s)" if isinstance(el, (int, float)) else ""
    task = f" task {record['task']}" if record.get("task") is not None else ""
    return (f"{src}{task} {record.get('unit', 'round')} {done}"
            f"{': ' + metrics if metrics else ''}{tail}")


class ProgressReporter:
    """Task side of the progress channel (see the module docstring).

    Parameters
    ----------
    spec : dict or None
        From ``FitProgress.task_spec()`` on the driver; None (or ``every`` 0) disables it.
    rank : int
        This task's rank or partition, sent with every record.
    """

    def __init__(self, spec: dict | None, rank: int = 0):
        self.every = int(spec.get("every", 0)) if spec else 0
        self.enabled = self.every > 0
        self.rank = int(rank)
        self.source = (spec or {}).get("source", "sparkxml")
        # several tasks report (FastXML's tree groups): lines name the task
        self.task = self.rank if (spec or {}).get("per_task") else None
        self.connected = False
        self._t0 = time.perf_counter()
        if not self.enabled:
            return
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, args=(spec,), daemon=True,
                                        name="sparkxml-progress")
        self._thread.start()

    # ------------------------------------------------------------------ task API
    def due(self, done: int, total: int | None = None) -> bool:
        """True when item ``done`` (1-based) is one to report: every ``every``-th, and the
        last."""
        return self.enabled and (done % self.every == 0 or (total is not None and done == total))

    def progress(self, done: int, total: int | None = None, metrics: dict | None = None,
                 unit: str = "round", force: bool = False) -> None:
        """Report ``done`` of ``total`` items (1-based) with optional metrics, when
        :meth:`due` (or ``force``)."""
        if not (force and self.enabled) and not self.due(done, total):
            return
        self._put({"kind": "progress", "unit": unit, "done": int(done),
                   "total": None if total is None else int(total),
                   "metrics": {k: float(v) for k, v in (metrics or {}).items()
                               if v is not None},
                   "elapsed": time.perf_counter() - self._t0})

    def message(self, text: str) -> None:
        if self.enabled:
            self._put({"kind": "message", "text": str(text)})

    def close(self, timeout: float = 2.0) -> None:
        """Flush what is queued (waiting at most ``timeout`` seconds) and disconnect."""
        if not self.enabled:
            return
        self.enabled = False
        self._queue.put(_CLOSE)
        self._thread.join(timeout)

    # ------------------------------------------------------------------ internals
    def _put(self, record: dict) -> None:
        record.update(source=self.source, rank=self.rank, task=self.task)
        self._queue.put(record)

    def _connect(self, spec) -> Connection | None:
        for addr in spec.get("addresses", []):
            try:
                host, port = parse_address(addr)
                sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
            except (OSError, ValueError):
                continue
            try:
                handshake(sock, spec["authkey"], False, CONNECT_TIMEOUT_S * 5)
                return Connection(sock.detach())
            except Exception:  # noqa: BLE001 - not our driver (or it went away): next one
                sock.close()
        return None

    def _run(self, spec) -> None:
        conn = None
        try:
            conn = self._connect(spec)
        except Exception:  # noqa: BLE001 - never let progress reporting fail training
            conn = None
        self.connected = conn is not None
        while True:
            record = self._queue.get()
            if record is _CLOSE:
                break
            if conn is not None:
                try:
                    conn.send_bytes(json.dumps(record).encode("utf-8"))
                    continue
                except Exception:  # noqa: BLE001 - the driver stopped listening: log here
                    conn = None
            LOGGER.info(format_record(record))
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass
