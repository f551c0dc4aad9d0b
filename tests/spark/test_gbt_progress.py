"""Progress of a long fit: a 300-round GBT fit logs a line every N rounds live from the
training task (captured with caplog) and labels its Spark jobs with a job group, a
description per phase and tags, read back through the status tracker."""
import logging
import re

import numpy as np
import pandas as pd
import pytest
from _jobs import job_groups

from sparkxml import GBTClassifier


@pytest.fixture(scope="module")
def small(spark):
    rng = np.random.default_rng(8)
    n = 400
    X = rng.normal(size=(n, 3))
    pdf = pd.DataFrame(X, columns=["a", "b", "c"])
    pdf["label"] = ((X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=n)) > 0).astype(float)
    pdf["valid"] = rng.random(n) < 0.25
    return spark.createDataFrame(pdf).cache()


def test_300_round_fit_logs_progress_and_labels_its_jobs(spark, small, caplog):
    caplog.set_level(logging.INFO, logger="sparkxml")
    est = GBTClassifier(featuresCols=["a", "b", "c"], validationIndicatorCol="valid",
                        maxIter=300, maxDepth=2, stepSize=0.05, numWorkers=1, verbose=50)
    model = est.fit(small)
    s = model.summary
    assert s.roundsRun == 300 and len(s.trainingHistory) == 300
    assert len(s.validationHistory) == 300
    assert s.trainingHistory[-1] < s.trainingHistory[0]

    lines = [r.getMessage() for r in caplog.records if " round " in r.getMessage()]
    want = [f"GBTClassifier round {i}/300:" for i in range(50, 301, 50)]
    assert [ln.split(" train-")[0] for ln in lines] == want, lines
    # each line carries the round's training and validation metric, as in the summary
    for i, ln in zip(range(50, 301, 50), lines):
        m = re.search(r"train-logloss=([0-9.e-]+) validation-logloss=([0-9.e-]+) \((.*) s\)",
                      ln)
        assert m, ln
        assert float(m.group(1)) == pytest.approx(s.trainingHistory[i - 1], rel=1e-5)
        assert float(m.group(2)) == pytest.approx(s.validationHistory[i - 1], rel=1e-5)
    # they were sent live by the task, not replayed from the history afterwards
    assert not any("could not reach" in r.getMessage() for r in caplog.records)
    # (400 rows, one worker: the training task computes the bin edges, no sketch phase)
    for phase in ("checks", "train"):
        assert any(r.getMessage().startswith(f"GBTClassifier {phase}: ")
                   for r in caplog.records)

    # Spark UI: one job group per fit, a description per phase, tags
    sc = spark.sparkContext  # tests only: the library never touches the SparkContext
    groups = [g for g in job_groups(sc) if g.startswith(f"sparkxml-GBTClassifier-{est.uid}-")]
    assert len(groups) == 1
    store = sc._jsc.sc().statusStore()
    jobs = sc.statusTracker().getJobIdsForGroup(groups[0])
    descriptions = {store.job(j).description().get() for j in jobs}
    assert descriptions == {f"sparkxml GBTClassifier {est.uid}: {p}"
                            for p in ("checks", "train")}
    tags = set()
    for j in jobs:
        it = store.job(j).jobTags().iterator()
        while it.hasNext():
            tags.add(it.next())
    assert {"sparkxml", "sparkxml-GBTClassifier", "sparkxml-train", groups[0]} <= tags
    # the fit left the thread's group, description and tags as they were
    assert sc.getLocalProperty("spark.jobGroup.id") is None
    assert sc.getLocalProperty("spark.job.description") is None
    assert not any(t.startswith("sparkxml") for t in sc.getJobTags())

    # evaluate() runs its jobs under its own description
    caplog.clear()
    model.evaluate(small)
    after = [g for g in job_groups(sc) if g.startswith("sparkxml-GBTClassificationModel-")]
    assert after and all(store.job(j).description().get().endswith(": evaluate")
                         for j in sc.statusTracker().getJobIdsForGroup(after[-1]))


def test_silent_by_default(small, caplog):
    caplog.set_level(logging.INFO, logger="sparkxml")
    GBTClassifier(featuresCols=["a", "b", "c"], maxIter=5, numWorkers=1).fit(small)
    assert not [r for r in caplog.records if r.name == "sparkxml"]


def test_fastxml_reports_trees_done(spark, caplog):
    from sparkxml import FastXML
    from sparkxml.synthetic import make_multilabel, rows_frame

    caplog.set_level(logging.INFO, logger="sparkxml")
    X, Y = make_multilabel(n_rows=300, n_features=80, n_labels=15, seed=1)
    df = rows_frame(spark, X, Y, 0, 300, 80)
    est = FastXML(numTrees=4, numWorkers=2, verbose=1)
    model = est.fit(df)
    assert model.trees == 4
    lines = sorted(r.getMessage().split(" (")[0] for r in caplog.records
                   if " tree " in r.getMessage())
    assert lines == [f"FastXML task {t} tree {i}/2" for t in (0, 1) for i in (1, 2)]
    sc = spark.sparkContext
    groups = [g for g in job_groups(sc) if g.startswith(f"sparkxml-FastXML-{est.uid}-")]
    store = sc._jsc.sc().statusStore()
    assert {store.job(j).description().get()
            for j in sc.statusTracker().getJobIdsForGroup(groups[0])} == \
        {f"sparkxml FastXML {est.uid}: checks", f"sparkxml FastXML {est.uid}: train"}
