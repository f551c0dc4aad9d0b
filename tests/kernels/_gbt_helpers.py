"""Shared by the GBT kernel tests that cross-check XGBoost node for node and simulate
workers: data whose features take few distinct values, and a threaded rank runner."""
import threading

import numpy as np

from sparkxml_kernels.collective import InProcessGroup


def few_values(seed, n=3000):
    """(X, y): 5 features of 2..30 distinct values, so XGBoost's hist cut points are the
    values themselves and both libraries see one bin per value (the same candidate splits,
    as its exact method does)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, k, n) * s for k, s in
                         ((12, 1.0), (5, 0.5), (30, 0.1), (2, 1.0), (7, 3.0))]).astype(float)
    y = (np.sin(X[:, 0]) + 0.8 * (X[:, 1] > 1) + X[:, 2] + 0.3 * X[:, 3] * X[:, 4]
         + 0.2 * rng.standard_normal(n))
    return X, y


def run_ranks(k, fn, timeout=120):
    """``[fn(rank, collective) for every rank]``, the ranks on threads of one process
    (``InProcessGroup``); the first error of any rank is raised."""
    group = InProcessGroup(k, timeout=timeout)
    out, errors = [None] * k, []

    def work(r):
        try:
            out[r] = fn(r, group.collective(r))
        except Exception as e:  # pragma: no cover - surfaced below
            errors.append(e)
            group.abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in range(k)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    return out
