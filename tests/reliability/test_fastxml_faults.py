"""FastXML under a killed worker. Its training tasks are ordinary (not barrier) tasks, so a
task whose Python worker dies is retried by Spark's task retries: on ``local[2,4]`` (and on a
cluster, ``spark.task.maxFailures`` = 4) the fit completes with the same model; on
``local[2]`` (no task retries) the same fault fails the fit (see the README)."""
import os

import numpy as np
import pytest

import sparkxml.fastxml.fit as fastxml_module
from sparkxml import FastXML
from sparkxml.datasets import from_csr
from sparkxml.synthetic import make_multilabel


@pytest.fixture(scope="module")
def data(spark):
    (xi, xj, xv), (yi, yj) = make_multilabel(n_rows=600, n_features=300, n_labels=30, seed=2)
    return from_csr(spark, xi, xj, xv, 300, labels=(yi, yj)).cache()


def _forest(model):
    return {k: np.asarray(v) for k, v in model._arrays.items()}


def test_killed_training_task_is_retried_with_the_same_model(data, tmp_path, monkeypatch):
    est = FastXML(numTrees=4, numWorkers=2, seed=3)
    clean = _forest(est.fit(data))
    marker = str(tmp_path / "killed")
    make_train_fn = fastxml_module._make_train_fn

    def killing_train_fn(*args, **kwargs):
        train = make_train_fn(*args, **kwargs)

        def train_once_killed(batches):
            import signal

            if not os.path.exists(marker):  # the first training task dies (once)
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            yield from train(batches)

        return train_once_killed

    monkeypatch.setattr(fastxml_module, "_make_train_fn", killing_train_fn)
    faulty = _forest(est.fit(data))
    assert os.path.exists(marker)  # the fault did happen
    assert faulty.keys() == clean.keys()
    for k in clean:
        np.testing.assert_array_equal(faulty[k], clean[k], err_msg=k)
