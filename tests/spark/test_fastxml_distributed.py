"""Distributed (data-parallel) FastXML / PfastreXML training on local[2]: the top levels are
the replicated trees' nodes, precision stays close, the model is deterministic, the memory
estimate picks the mode, and the forest travels in chunks."""
import numpy as np
import pytest

from sparkxml import FastXML, PfastreXML
from sparkxml.synthetic import csr_rows, make_multilabel, rows_frame
from sparkxml_kernels.fastxml.forest import FOREST_KEYS, take_trees


@pytest.fixture(scope="module")
def synth(spark):
    X, Y = make_multilabel(n_rows=1000, n_features=400, n_labels=40, seed=3)
    train = rows_frame(spark, X, Y, 0, 800, 400).repartition(3).cache()
    return train, csr_rows(X, Y, 800, 1000)


@pytest.fixture(scope="module")
def fits(synth):
    import sparkxml.fastxml.fit as fit

    train, _ = synth
    kw = dict(numTrees=3, numWorkers=2, seed=7)
    rep = FastXML(**kw).fit(train)  # "auto": everything fits here
    # a task budget one byte short of what replication needs: "auto" trains distributed
    short = rep._training_info["replicated_task_bytes"] - 1
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fit, "task_memory", lambda spark, w: (short, short, "a test budget"))
        dis = FastXML(**kw).fit(train)
    return {"replicated": rep, "distributed": dis}


def _precision(model, test, k):
    """P@k on the test rows, predicted on the driver (Spark's transform is tested
    elsewhere; this compares forests)."""
    from sparkxml_kernels import metrics

    (xi, xj, xv), (yi, yj) = test
    labels, _ = model.predictor.predict(xi, xj, xv, k=k)
    return metrics.precision_at_k(metrics.topk_matrix(labels, k), yi, yj, k)


def _assert_same_forest(a, b):
    for key in FOREST_KEYS:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _assert_same_top(rep, dis, tops):
    """Nodes 0..k-1 of every tree (the levels grown data-parallel) are the replicated ones."""
    for t, k in enumerate(tops):
        a, b = take_trees(rep, [t]), take_trees(dis, [t])
        np.testing.assert_array_equal(a["children"][:k], b["children"][:k])
        for ptr, keys in (("w_indptr", ("w_index", "w_value")),
                          ("leaf_indptr", ("leaf_label", "leaf_score"))):
            for key in keys:
                np.testing.assert_array_equal(a[key][:a[ptr][k]], b[key][:b[ptr][k]])


def test_top_levels_are_the_replicated_nodes_and_precision_is_close(synth, fits):
    _, test = synth
    rep, dis = fits["replicated"], fits["distributed"]
    assert rep._training_info["mode"] == "replicated"
    info = dis._training_info
    assert info["mode"] == "distributed" and info["threshold_rows"] == 400  # 800 rows / 2
    tops = info["top_nodes_per_tree"]
    assert len(tops) == 3 and min(tops) >= 3  # the root and its children, at least
    _assert_same_top(rep._arrays, dis._arrays, tops)
    # below the frontier the subtrees have their own random streams
    assert not np.array_equal(rep._arrays["w_value"], dis._arrays["w_value"])
    for k in (1, 3):
        assert abs(_precision(rep, test, k) - _precision(dis, test, k)) < 0.05


def test_distributed_model_is_deterministic_whatever_the_partitioning(synth, fits, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="sparkxml")
    train, _ = synth
    again = FastXML(numTrees=3, numWorkers=2, seed=7, trainingMode="distributed",
                    verbose=1).fit(train.repartition(5))
    _assert_same_forest(again._arrays, fits["distributed"]._arrays)
    # verbose: rank 0 of the barrier stage reports each tree whose top levels are done
    lines = [r.getMessage().split(" (")[0] for r in caplog.records
             if "tree top" in r.getMessage()]
    assert lines == [f"FastXML tree top {i}/3" for i in (1, 2, 3)]


def test_one_shard_is_the_replicated_model(synth, fits):
    # numWorkers=1: every root fits the one task, so each tree is grown whole from its own
    # seed, after the rows went through range partitioning and the (tree, node) regrouping
    one = FastXML(numTrees=3, numWorkers=1, seed=7, trainingMode="distributed").fit(synth[0])
    assert one._training_info["top_nodes_per_tree"] == [0, 0, 0]
    _assert_same_forest(one._arrays, fits["replicated"]._arrays)


def test_memory_estimate_chooses_the_mode(synth, fits, monkeypatch):
    import sparkxml.fastxml.fit as fit

    train, _ = synth
    rep, dis = fits["replicated"]._training_info, fits["distributed"]._training_info
    # "auto" replicated when replication fitted, and trained distributed (the fits fixture)
    # when the task budget was one byte short of the estimate
    assert rep["mode"] == "replicated" and dis["mode"] == "distributed"
    assert dis["task_memory_bytes"] == rep["replicated_task_bytes"] - 1
    budget = {"bytes": 0}
    monkeypatch.setattr(fit, "task_memory", lambda spark, w: (budget["bytes"], budget["bytes"],
                                                              "a test budget"))
    # forced replication that does not fit fails early with the figures
    with pytest.raises(MemoryError, match=r"needs about \d+ MiB, but only 0 MiB .* "
                                          r"trainingMode='distributed'"):
        FastXML(numTrees=2, numWorkers=2, trainingMode="replicated").fit(train)
    # so little memory that no shard fits: the error says what to change
    budget["bytes"] = rep["replicated_task_bytes"] // 50
    with pytest.raises(MemoryError, match=r"numWorkers=2 gives each task 400 rows.* raise "
                                          r"spark.executor.pyspark.memory"):
        FastXML(numTrees=2, numWorkers=2).fit(train)
    with pytest.raises(ValueError, match="trainingMode"):
        FastXML(trainingMode="sharded").fit(train)


def test_distributed_plan_on_delicious_sized_data():
    from sparkxml.fastxml.distributed import min_workers, plan
    from sparkxml.fastxml.fit import estimate_task_bytes

    # the XC Delicious training set's figures (12920 rows, 500 features, 983 labels)
    stats = dict(rows=12920, nnz_x=239549, nnz_y=246088, n_features=500, n_labels=983)

    def estimate(rows):
        f = rows / stats["rows"]
        return estimate_task_bytes(rows, stats["nnz_x"] * f, stats["nnz_y"] * f, 500, 983)

    need = estimate(stats["rows"])
    half = plan(stats, 2, 50, need // 2, estimate)
    # half the memory replication needs: 2 shards, subtrees of at most half the rows, a few
    # trees grown together, each stage within the budget
    assert half["lanes"] >= 1 and 10 < half["threshold"] <= 6460
    assert half["stage1_bytes"] <= need // 2 and half["stage2_bytes"] <= need // 2
    assert plan(stats, 2, 50, need // 4, estimate)["lanes"] == 0
    w = min_workers(stats, 50, need // 4, estimate, 10)
    assert w is not None and w > 2 and plan(stats, w, 50, need // 4, estimate)["lanes"] >= 1


def test_pfastrexml_distributed(synth):
    train, _ = synth
    kw = dict(numTrees=2, numWorkers=2, seed=2)
    rep = PfastreXML(**kw).fit(train)
    dis = PfastreXML(trainingMode="distributed", **kw).fit(train)
    # label weights and tail centroids are the replicated ones bit for bit
    for key in ("inv_prop", "tail_indptr", "tail_index", "tail_value"):
        np.testing.assert_array_equal(rep._arrays[key], dis._arrays[key], err_msg=key)
    tops = dis._training_info["top_nodes_per_tree"]
    assert min(tops) >= 3
    _assert_same_top(rep._arrays, dis._arrays, tops)


def test_results_travel_in_bounded_chunks(monkeypatch):
    import pyarrow as pa

    import sparkxml._core.barrier as barrier

    monkeypatch.setattr(barrier, "CHUNK_BYTES", 1000)
    arrays = {"big": np.arange(10_000, dtype=np.int64), "small": np.ones((2, 3), np.float32),
              "name": np.asarray("fastxml")}
    batches = list(barrier.encode_array_batches(3, arrays, {"x": 1}, max_batch_bytes=4000))
    for b in batches:
        cells = b.column("data").to_pylist()
        assert max(len(c) for c in cells) <= 1000 and sum(len(c) for c in cells) <= 4000
    got, infos = barrier.decode_ranks(pa.Table.from_batches(batches))
    assert infos == {3: {"x": 1}} and str(got[3]["name"]) == "fastxml"
    np.testing.assert_array_equal(got[3]["big"], arrays["big"])
    np.testing.assert_array_equal(got[3]["small"], arrays["small"])


def test_rank_decoder_puts_chunks_in_place_from_any_table_and_order(monkeypatch):
    """Chunks of several ranks, split over tables and shuffled, decode to the arrays; a
    repeated or missing chunk is refused with the array named."""
    import pyarrow as pa

    import sparkxml._core.barrier as barrier

    monkeypatch.setattr(barrier, "CHUNK_BYTES", 1000)
    rng = np.random.default_rng(0)
    sent = {r: {"w": rng.normal(size=(37, 11)), "ids": np.arange(999, dtype=np.int32),
                "empty": np.zeros(0, np.float32), "name": np.asarray(f"rank{r}"),
                "flag": np.asarray(True)} for r in range(3)}
    table = pa.Table.from_batches([b for r in sent for b in barrier.encode_array_batches(
        r, sent[r], {"rank": r}, max_batch_bytes=3000)])
    table = table.take(pa.array(rng.permutation(table.num_rows)))
    decoder = barrier.RankDecoder()
    for lo in range(0, table.num_rows, 5):
        decoder.add(table.slice(lo, 5))
    got, infos = decoder.result()
    assert infos == {r: {"rank": r} for r in range(3)}
    for r in range(3):
        assert set(got[r]) == set(sent[r])
        for name, a in sent[r].items():
            assert got[r][name].dtype == a.dtype and got[r][name].shape == a.shape, name
            np.testing.assert_array_equal(got[r][name], a, err_msg=name)
        assert got[r]["w"].flags.writeable
    w_rows = [q for q, (rank, name) in enumerate(zip(table.column("rank").to_pylist(),
                                                     table.column("name").to_pylist()))
              if rank == 1 and name == "w"]
    with pytest.raises(ValueError, match="'w' of rank 1: chunk .* repeated"):
        decoder = barrier.RankDecoder()
        decoder.add(table)
        decoder.add(table.take(pa.array(w_rows[:1])))
    decoder = barrier.RankDecoder()
    keep = np.ones(table.num_rows, bool)
    keep[w_rows[0]] = False
    decoder.add(table.filter(pa.array(keep)))
    with pytest.raises(ValueError, match="'w' of rank 1: .* bytes arrived"):
        decoder.result()


def test_one_tasks_large_result_reaches_the_driver_in_pieces(spark):
    """A task's model part (here 40 MB from one task) is shuffled by chunk before the collect:
    no reduce partition holds more than a fraction of it, and it decodes unchanged."""
    from pyspark.sql import functions as F

    import sparkxml._core.barrier as barrier

    n = 5 << 20  # 5 Mi float64: 40 MB, five chunks of 8 MB

    def emit(batches):
        import numpy as np

        from sparkxml._core.barrier import encode_array_batches

        for _ in batches:
            pass
        yield from encode_array_batches(0, {"w": np.arange(n, dtype=np.float64)}, {"r": 0})

    out = spark.range(1, numPartitions=1).mapInArrow(emit, barrier.RESULT_SCHEMA)
    shuffled = out.repartition(barrier.RESULT_PARTITIONS, "rank", "name", "part")
    per_partition = [r[0] for r in shuffled.groupBy(F.spark_partition_id())
                     .agg(F.sum(F.length("data"))).collect()]
    assert len(per_partition) >= 3 and max(per_partition) <= 2 * barrier.CHUNK_BYTES + 1024, \
        per_partition
    arrays, infos = barrier.decode_ranks(barrier.collect_chunk_rows(out))
    assert infos == {0: {"r": 0}}
    np.testing.assert_array_equal(arrays[0]["w"], np.arange(n, dtype=np.float64))


def test_a_result_over_the_job_budget_comes_back_in_several_jobs_from_one_training(
        spark, tmp_path):
    """Past one collect job's budget (``spark.driver.maxResultSize``), the persisted shuffle
    is collected in groups of reduce partitions: several jobs, each within the budget, the
    training task run once, the arrays unchanged."""
    from _jobs import job_ids

    import sparkxml._core.barrier as barrier

    n = 5 << 20  # 40 MB in five 8 MB chunks
    runs = tmp_path / "runs"
    runs.mkdir()

    def emit(batches):
        import os
        import uuid

        import numpy as np

        from sparkxml._core.barrier import encode_array_batches

        for _ in batches:
            pass
        open(os.path.join(str(runs), uuid.uuid4().hex), "w").close()
        yield from encode_array_batches(0, {"w": np.arange(n, dtype=np.float64)}, {"r": 0})

    out = spark.range(1, numPartitions=1).mapInArrow(emit, barrier.RESULT_SCHEMA)
    sc = spark.sparkContext
    before = job_ids(sc)
    arrays, infos = barrier.collect_ranks(out, max_job_bytes=barrier.CHUNK_BYTES * 2 + 4096)
    jobs = len(job_ids(sc) - before)
    np.testing.assert_array_equal(arrays[0]["w"], np.arange(n, dtype=np.float64))
    assert arrays[0]["w"].flags.writeable
    assert infos == {0: {"r": 0}}
    assert len(list(runs.iterdir())) == 1  # the training ran once, whatever the jobs
    assert jobs >= 4, jobs  # the sizes job and at least three collects of <= 2 chunks


def test_a_reduce_partition_over_the_job_budget_comes_back_in_slices(spark):
    """A reduce partition larger than one collect job's budget (a model of several GB over
    the fixed reduce partitions) is collected in slices of its chunks, each within the
    budget, the arrays unchanged."""
    from _jobs import job_ids

    import sparkxml._core.barrier as barrier

    n = 5 << 20  # 40 MB in five 8 MB chunks, all in one partition

    def emit(batches):
        import numpy as np

        from sparkxml._core.barrier import encode_array_batches

        for _ in batches:
            pass
        yield from encode_array_batches(0, {"w": np.arange(n, dtype=np.float64)}, {"r": 0})

    out = spark.range(1, numPartitions=1).mapInArrow(emit, barrier.RESULT_SCHEMA).cache()
    try:
        assert out.count() == 6  # the five chunks and the info row
        sc = spark.sparkContext
        before = job_ids(sc)
        budget = barrier.CHUNK_BYTES * 2 + 4096
        tables = list(barrier._collect_in_groups(out, budget))
        jobs = len(job_ids(sc) - before)
        assert len(tables) >= 3
        assert all(sum(len(c) for c in t.column("data").to_pylist()) <= budget
                   for t in tables)
        decoder = barrier.RankDecoder()
        for t in tables[::-1]:  # any order
            decoder.add(t)
        arrays, infos = decoder.result()
        np.testing.assert_array_equal(arrays[0]["w"], np.arange(n, dtype=np.float64))
        assert infos == {0: {"r": 0}}
        assert jobs >= 5, jobs  # two sizes jobs and at least three collects of <= 2 chunks
    finally:
        out.unpersist()


def test_many_small_results_in_one_partition_come_back_in_slices(spark):
    """Many ranks' results of one chunk each (part 0), all in one reduce partition and more
    than the budget together, are collected in slices within it."""
    import sparkxml._core.barrier as barrier

    n = 3 << 17  # 3 MB a rank: one chunk each

    def emit(batches):
        import numpy as np

        from sparkxml._core.barrier import encode_array_batches

        for _ in batches:
            pass
        for r in range(8):
            yield from encode_array_batches(r, {"w": np.full(n, float(r))}, None,
                                            with_info=False)

    out = spark.range(1, numPartitions=1).mapInArrow(emit, barrier.RESULT_SCHEMA).cache()
    try:
        budget = barrier.CHUNK_BYTES + 4096
        tables = list(barrier._collect_in_groups(out.coalesce(1), budget))
        assert len(tables) >= 3
        assert all(sum(len(c) for c in t.column("data").to_pylist()) <= budget
                   for t in tables)
        decoder = barrier.RankDecoder()
        for t in tables:
            decoder.add(t)
        arrays, _ = decoder.result()
        assert sorted(arrays) == list(range(8))
        for r in range(8):
            np.testing.assert_array_equal(arrays[r]["w"], np.full(n, float(r)))
    finally:
        out.unpersist()


def test_partition_groups_pack_within_the_budget_and_name_the_conf():
    from sparkxml._core.barrier import job_result_budget, partition_groups

    assert partition_groups({0: 5, 3: 4, 1: 6, 2: 0}, 10) == [[0], [1, 2, 3]]
    assert partition_groups({}, 10) == []
    with pytest.raises(RuntimeError, match="spark.driver.maxResultSize"):
        partition_groups({0: 11}, 10)

    class Conf:
        def __init__(self, value):
            self.value = value

        def get(self, key, default=None):
            assert key == "spark.driver.maxResultSize"
            return self.value

    class Session:
        def __init__(self, value):
            self.conf = Conf(value)

    assert job_result_budget(Session("1g")) == 256 << 20
    assert job_result_budget(Session("400m")) == 200 << 20
    assert job_result_budget(Session("0")) == 256 << 20
