"""Faults during GBT training: a lost task is retried with the same result; a silent peer
fails the fit with a clear error in bounded time (never hangs).

The fault is injected by a private test hook (``_fault_injection``) that the barrier task
checks in its per-round callback: rank 1 raises (or sleeps) after round 1. A marker file
makes the fault happen once, so Spark's retry of the whole barrier stage succeeds.

Barrier retries need no ``spark.task.maxFailures``: the training stage's output goes through a
shuffle, so it is a ShuffleMapStage, which Spark resubmits as a whole after a barrier task
failure (up to ``spark.stage.maxConsecutiveAttempts``, 4) even on ``local[2]``.
"""
import time

import numpy as np
import pandas as pd
import pytest

from sparkxml import GBTRegressor


@pytest.fixture(scope="module")
def data(spark):
    rng = np.random.default_rng(11)
    n = 2000
    X = rng.normal(size=(n, 5))
    pdf = pd.DataFrame(X, columns=[f"x{i}" for i in range(5)])
    pdf["label"] = X[:, 0] * 2 + np.sin(X[:, 1]) + 0.1 * rng.normal(size=n)
    return spark.createDataFrame(pdf).cache()


def _est(**kw):
    return GBTRegressor(featuresCols=[f"x{i}" for i in range(5)], maxIter=8, maxDepth=4,
                        subsamplingRate=0.8, numWorkers=2, seed=5, **kw)


def _pred(model, df):
    return np.array([r[0] for r in model.transform(df).select("prediction").collect()])


def test_lost_task_is_retried_with_the_same_model(data, tmp_path):
    clean = _est().fit(data)
    est = _est()
    marker = tmp_path / "fault-once"
    est._fault_injection = {"rank": 1, "after_round": 1, "kind": "raise",
                            "marker": str(marker)}
    model = est.fit(data)
    assert marker.exists()  # the fault did happen (attempt 1 failed, the retry succeeded)
    assert model.getNumTrees == 8
    np.testing.assert_allclose(_pred(model, data), _pred(clean, data), rtol=0, atol=1e-6)


def test_silent_peer_fails_within_timeout(data):
    # 5 s: short beside the 8 s hang, long beside a round's exchange on a loaded machine;
    # each stage attempt lasts about as long as the hang (the sleeping task is not
    # interrupted), so the hang is only as long as the 3 s margin needs: Spark makes 4 attempts
    est = _est(timeoutSeconds=5.0)
    # rank 1 stops answering after round 0 on every attempt; rank 0 gives up after 5 s
    est._fault_injection = {"rank": 1, "after_round": 0, "kind": "hang", "seconds": 8}
    t0 = time.monotonic()
    with pytest.raises(Exception) as info:
        est.fit(data)
    elapsed = time.monotonic() - t0
    msg = str(info.value)
    assert "rank 1" in msg and "stopped answering" in msg, msg[:2000]
    # 4 stage attempts, each bounded by the 5 s timeout plus task start-up and kill time
    assert elapsed < 120, elapsed
