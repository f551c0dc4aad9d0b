"""The progress channel without Spark: a task-side reporter sends lines to the driver-side
listener over an authenticated socket; strangers are refused; an unreachable driver makes
the task log locally instead. (``sparkxml._core.progress`` imports no pyspark.)"""
import logging
import time

from sparkxml_kernels.progress import ProgressReporter, format_record


class _Connect:
    """Stands in for a Spark Connect session: tags only, no SparkContext."""
    __module__ = "pyspark.sql.connect.session"

    def __init__(self):
        self.tags = set()

    def getTags(self):
        return set(self.tags)

    def addTag(self, t):
        self.tags.add(t)

    def removeTag(self, t):
        self.tags.discard(t)


class _Est:
    uid = "GBTClassifier_abc"


def _wait(pred, seconds=10.0):
    end = time.monotonic() + seconds
    while not pred() and time.monotonic() < end:
        time.sleep(0.02)
    return pred()


def test_lines_reach_the_driver_log(caplog):
    from sparkxml._core.progress import FitProgress

    caplog.set_level(logging.INFO, logger="sparkxml")
    spark = _Connect()
    with FitProgress(spark, _Est(), verbose=10) as progress:
        with progress.phase("train"):
            assert {"sparkxml", "sparkxml-train", progress.group} <= spark.tags
            spec = progress.task_spec()
            rep = ProgressReporter(spec, rank=0)
            for i in range(25):
                rep.progress(i + 1, 25, {"train-rmse": 1.0 / (i + 1)})
            rep.close()
            assert rep.connected
            assert _wait(lambda: progress.live_lines == 3)
        assert spark.tags == set()  # the phase removed its tags
    lines = [r.getMessage() for r in caplog.records if " round " in r.getMessage()]
    assert lines[0].startswith("_Est round 10/25: train-rmse=0.1 (") and lines[0][-3:] == " s)"
    assert [ln.split(":")[0] for ln in lines] == ["_Est round 10/25", "_Est round 20/25",
                                                  "_Est round 25/25"]
    assert any("_Est train: " in r.getMessage() for r in caplog.records)


def test_a_wrong_key_is_refused_and_an_unreachable_driver_logs_locally(caplog):
    from sparkxml._core.progress import FitProgress

    caplog.set_level(logging.INFO, logger="sparkxml")
    with FitProgress(_Connect(), _Est(), verbose=1) as progress:
        spec = progress.task_spec()
        stranger = ProgressReporter(dict(spec, authkey=b"x" * 32), rank=0)
        stranger.progress(1, 1, {"a": 1.0})
        stranger.close()
        assert not stranger.connected and progress.live_lines == 0
    # nobody listens there: the record is logged by the task itself
    lost = ProgressReporter(dict(spec, addresses=["127.0.0.1:1"]), rank=3)
    lost.progress(5, 5, {"b": 2.0}, unit="tree")
    lost.close()
    assert not lost.connected
    assert any(r.getMessage().startswith("_Est tree 5/5: b=2") for r in caplog.records)


def test_history_after_the_stage_and_silence():
    from sparkxml._core.progress import FitProgress

    rows = [(i, {"train-logloss": 1.0 / i}) for i in range(1, 8)]
    logger = logging.getLogger("sparkxml")
    seen = []
    handler = logging.Handler()
    handler.emit = lambda r: seen.append(r.getMessage())
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        FitProgress(_Connect(), _Est(), verbose=3).log_rounds(rows, 7)
        FitProgress(_Connect(), _Est(), verbose=0).log_rounds(rows, 7)
        assert FitProgress(_Connect(), _Est(), verbose=0).task_spec() is None
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert [s.split(":")[0] for s in seen[1:]] == ["_Est round 3/7", "_Est round 6/7",
                                                   "_Est round 7/7"]
    assert format_record({"kind": "progress", "source": "FastXML", "unit": "tree", "done": 4,
                          "total": 25, "task": 1, "elapsed": 30.24}) == \
        "FastXML task 1 tree 4/25 (30.2 s)"
    assert ProgressReporter(None).enabled is False
    assert format_record({"kind": "message", "source": "FastXML", "text": "hi"}) == "FastXML: hi"
