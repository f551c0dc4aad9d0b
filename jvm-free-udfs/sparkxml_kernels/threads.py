"""Threads inside one task: how many the numba ``parallel=True`` kernels may use.

A Spark task owns ``spark.task.cpus`` cores (xgboost.spark sizes its ``nthread`` the same
way); the Spark layer reads that number in the task and passes it down as ``n_threads``.
Kernels take ``n_threads`` explicitly: ``1`` runs the serial kernel (no thread pool is
started, nothing extra is compiled), ``> 1`` the parallel twin. Every parallel kernel splits
its work into pieces whose results do not depend on how many threads run them (features of a
histogram, chunks of a row range), so models are identical whatever ``n_threads``.
"""
from __future__ import annotations

import os

import numba


def max_threads() -> int:
    """The most threads numba can run here (``NUMBA_NUM_THREADS``, default: the CPUs)."""
    return int(numba.config.NUMBA_NUM_THREADS)


def check_threads(n_threads) -> int:
    """``n_threads`` as an int >= 1 (ValueError naming the value otherwise)."""
    try:
        n = int(n_threads)
    except (TypeError, ValueError):
        raise ValueError(f"nthread must be an integer >= 1, got {n_threads!r}") from None
    if n != n_threads or n < 1:
        raise ValueError(f"nthread must be an integer >= 1, got {n_threads!r}")
    return n


def use_threads(n_threads) -> int:
    """Let this thread's numba parallel regions use ``min(n_threads, max_threads())``
    threads; returns that number (1: callers take their serial kernels).

    Unless the user chose otherwise, OpenMP's idle threads sleep instead of spinning
    (``OMP_WAIT_POLICY=PASSIVE``, read when numba first starts its pool): an executor runs
    several tasks on shared cores, and spinning threads took cores from them (measured on
    the 2-core test machine under load: 3x the CPU time for the same model)."""
    n = min(check_threads(n_threads), max_threads())
    if n > 1:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        numba.set_num_threads(n)
    return n


# below this many rows a parallel region costs more than it saves (thread wake-ups, and on a
# busy machine waiting for a descheduled thread): the serial kernel runs instead
MIN_PARALLEL_ROWS = 32768


def worth_threads(lengths) -> bool:
    """Whether a call over row ranges of these ``lengths`` (int array) should go parallel."""
    return int(lengths.sum()) >= MIN_PARALLEL_ROWS
