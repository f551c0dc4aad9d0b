"""One-barrier-stage distributed training, shared by GBT and LambdaMART.

``run_barrier_training`` runs ONE ``mapInArrow(..., barrier=True)`` stage over ``num_workers``
partitions of a DataFrame. In every task:

1. the task opens a TCP listener on an ephemeral port and the tasks exchange their
   ``host:port`` (skipped for a single worker) on a helper thread, over sockets
   (``sparkxml_kernels.collective.rendezvous``: milliseconds, where Spark's
   ``BarrierTaskContext.allGather`` takes about a second), while
2. ``load_fn(batches, rank, world_size)`` turns the task's Arrow batches into whatever
   the trainer needs (binned matrix, labels...);
3. a ``SocketCollective`` (``sparkxml_kernels.collective``) connects the ranks directly,
   authenticated with a key derived from the random per-fit key carried in the task closure
   and the gathered messages, which hold a random nonce of each task (so a task left over
   from a failed stage attempt cannot join the retry); each listener binds to the executor
   address Spark reports for its task;
4. ``train_fn(state, collective, rank, world_size)`` runs on every rank in lockstep and returns
   ``(arrays, info)``: rank 0's dict of numpy arrays is the model (other ranks return None),
   ``info`` a JSON-able dict (every rank; e.g. memory and timings);
5. the arrays come back to the driver as binary rows (name, dtype, shape, part, bytes), in
   chunks of at most ``CHUNK_BYTES``: no pickle anywhere.

Retries: the stage's output goes through a one-partition shuffle before it is collected, so
the barrier stage is a ShuffleMapStage. A failed barrier ShuffleMapStage is resubmitted as a
whole by Spark (``spark.stage.maxConsecutiveAttempts``, default 4); a failed barrier
ResultStage would abort the job instead. Training is deterministic, so a retried stage yields
the same model.

Only DataFrame APIs are used (``repartition``, ``mapInArrow``, ``_compat.to_arrow``), so this
works over Spark Connect. ``load_fn`` and ``train_fn`` travel to the executors by cloudpickle:
they must capture plain values, never an Estimator (``self``).
"""
from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import types as T

from sparkxml._core.compat import to_arrow
from sparkxml_kernels.array_chunks import (
    CHUNK_FIELDS,
    UNICODE,
    array_from_bytes,
    binary_array,
    empty_array,
    iter_chunks,
)
from sparkxml_kernels.memory import rss_bytes

# a model array travels in chunks of this size: small enough that the chunks of a large model
# spread over the reduce tasks of ``collect_chunk_rows``
CHUNK_BYTES = 8 << 20
# data a result batch carries at most (Arrow: < 2 GB a column); small, because in local mode
# the JVM that converts a task's batches to rows is the driver, whose heap (1 GB by default)
# holds a batch several times over while it does
BATCH_BYTES = 64 << 20
RESULT_PARTITIONS = 16  # reduce tasks of collect_chunk_rows

RESULT_SCHEMA = T.StructType([
    T.StructField("rank", T.IntegerType(), False),
    T.StructField("name", T.StringType(), False),
    T.StructField("dtype", T.StringType(), False),
    T.StructField("shape", T.ArrayType(T.LongType(), False), False),
    T.StructField("part", T.IntegerType(), False),
    T.StructField("data", T.BinaryType(), False),
])
_ARROW_SCHEMA = pa.schema([pa.field("rank", pa.int32(), False)] + CHUNK_FIELDS)
_INFO = "__info__"


def encode_arrays(rank: int, arrays: dict | None, info: dict | None) -> pa.RecordBatch:
    """Rows (rank, name, dtype, shape, part, data) for ``arrays`` plus one JSON ``info`` row,
    as ONE batch (see :func:`encode_array_batches` for results that may exceed 2 GB).

    The chunking is ``sparkxml_kernels.array_chunks``' (also the saved-model format):
    unicode/object arrays are refused, 0-d unicode arrays (e.g. an objective name) travel as
    their UTF-8 text with dtype 'U'.
    """
    (batch,) = encode_array_batches(rank, arrays, info, max_batch_bytes=1 << 62)
    return batch


def encode_array_batches(rank: int, arrays: dict | None, info: dict | None,
                         max_batch_bytes: int = BATCH_BYTES, with_info: bool = True):
    """:func:`encode_arrays` as a stream of batches of at most ``max_batch_bytes`` of data
    each (one chunk of ``CHUNK_BYTES`` at least): an Arrow binary column holds at most 2 GB
    a batch, so a model of any size travels. ``with_info=False`` leaves out the info row."""
    rows: list = []
    size = 0

    def flush():
        nonlocal rows, size
        batch = pa.RecordBatch.from_arrays(
            [pa.array([r[i] for r in rows], t) for i, t in enumerate(
                (pa.int32(), pa.string(), pa.string(),
                 pa.list_(pa.field("element", pa.int64(), False)), pa.int32()))]
            + [binary_array([r[5] for r in rows])], schema=_ARROW_SCHEMA)
        rows, size = [], 0
        return batch

    chunks = iter_chunks(arrays or {}, CHUNK_BYTES)
    if with_info:
        info_raw = np.frombuffer(json.dumps(info or {}, default=float).encode("utf-8"),
                                 np.uint8)
        chunks = itertools.chain(chunks, [(_INFO, "json", (), 0, info_raw)])
    for name, dtype, shape, part, data in chunks:
        if rows and size + data.size > max_batch_bytes:
            yield flush()
        rows.append((rank, name, dtype, list(shape), part, data))
        size += data.size
    if rows:
        yield flush()


def decode_arrays(table: pa.Table) -> tuple[dict, list]:
    """Inverse of ``encode_arrays`` over all ranks: (the lowest rank's arrays, normally rank
    0's, [info of each rank])."""
    arrays, infos = decode_ranks(table)
    # the lowest rank present: rank 0 of a barrier stage, or the one partition a sketch
    # task's rows were filtered to
    first = min(arrays) if arrays else None
    return (arrays[first] if arrays else {}), [infos[r] for r in sorted(infos)]


def collect_chunk_rows(df, max_job_bytes: int | None = None) -> pa.Table:
    """Collect ``df``'s ``RESULT_SCHEMA`` rows to the driver through a shuffle by (rank, name,
    part).

    A task's result reaches the driver as one block, which the driver's JVM holds several
    copies of while it collects (the fetched block, its deserialised rows, the Arrow batches
    it sends Python): one task with a model part of a few hundred MB exhausts a default 1 GB
    driver heap. After the shuffle its chunks (``CHUNK_BYTES`` each) arrive spread over
    ``RESULT_PARTITIONS`` reduce tasks instead. A fixed count: with the session's
    ``spark.sql.shuffle.partitions`` (8 in a test), a 315 MB model still came back in pieces
    too large for a 1 GB heap. The rows' order does not matter: ``decode_ranks`` orders the
    chunks by ``part``.

    One job collects the whole result unless it is larger than ``spark.driver.maxResultSize``
    (a limit per job: a level of 50,000 leaf labels' classifiers passed 1 GB). The shuffled
    rows are persisted, so that case is collected again from them, in groups of reduce
    partitions of at most :func:`job_result_budget` bytes a job, without training anything
    twice; a reduce partition larger than that comes back in slices of its chunks.
    ``max_job_bytes`` collects in such groups from the start. They are persisted on
    disk only: held in the JVM's storage memory, a 300 MB result and the collect's own
    copies of it exhausted a default 1 GB driver heap in local mode.

    :func:`collect_ranks` decodes the groups as they arrive instead of returning them.
    """
    return pa.concat_tables(list(_collected_tables(df, max_job_bytes)))


def collect_ranks(df, max_job_bytes: int | None = None) -> tuple[dict, dict]:
    """:func:`collect_chunk_rows` decoded as :func:`decode_ranks` decodes it, one collect
    job's rows at a time: the driver holds the decoded arrays and one job's rows (at most
    :func:`job_result_budget` bytes when the result needed several jobs), not every job's
    rows beside the arrays: a label-tree forest of 500k rows and 50k labels is ~5 GB."""
    decoder = RankDecoder()
    for table in _collected_tables(df, max_job_bytes):
        decoder.add(table)
        del table
    return decoder.result()


def _collected_tables(df, max_job_bytes: int | None):
    """The Arrow tables of :func:`collect_chunk_rows`' collect jobs, one at a time."""
    shuffled = (df.repartition(RESULT_PARTITIONS, "rank", "name", "part")
                .persist(StorageLevel.DISK_ONLY))
    try:
        if max_job_bytes is None:
            try:
                table = to_arrow(shuffled)
            except Exception as exc:  # classic (Py4JJavaError) or Connect: one message
                if "maxResultSize" not in str(exc):
                    raise
                table = None
            if table is not None:
                yield table
                return
            max_job_bytes = job_result_budget(df.sparkSession)
        yield from _collect_in_groups(shuffled, max_job_bytes)
    finally:
        shuffled.unpersist()


def job_result_budget(spark) -> int:
    """Bytes of chunk data one collect job may bring back: half of
    ``spark.driver.maxResultSize`` (0: unlimited; the rest is room for the rows' framing),
    at most 256 MB (the driver's JVM holds a job's result several times over while it
    converts it)."""
    from sparkxml._core.memory import parse_bytes

    limit = parse_bytes(spark.conf.get("spark.driver.maxResultSize", "1g"))
    return min(256 << 20, limit // 2) if limit > 0 else 256 << 20


def partition_groups(sizes: dict, max_bytes: int) -> list:
    """Consecutive ids (``sizes``: {id: bytes}, reduce partitions or the slices of one)
    packed into groups of at most ``max_bytes`` each; one larger than that fails with the
    figures."""
    groups: list = []
    total = 0
    for pid in sorted(sizes):
        size = int(sizes[pid])
        if size > max_bytes:
            raise RuntimeError(
                f"one piece of a training result holds {size >> 20} MB, more than one "
                f"collect job may bring back ({max_bytes >> 20} MB, half of "
                "spark.driver.maxResultSize); raise spark.driver.maxResultSize")
        if not groups or total + size > max_bytes:
            groups.append([])
            total = 0
        groups[-1].append(pid)
        total += size
    return groups


# a reduce partition over the job budget is collected in slices (its rows' ``rank + part``
# modulo this many times the slices the budget needs), so that uneven slices still fit
SLICE_SPARE = 4


def _collect_in_groups(shuffled, max_job_bytes: int):
    """Collect jobs of at most ``max_job_bytes`` of chunk data each, yielding each job's
    table: groups of reduce partitions, and a partition larger than that (a model of several
    GB in 16 partitions) in slices of its chunks by ``rank + part`` modulo k, each slice's
    size read first: the chunks of a large array (many parts) and the small results of many
    ranks (part 0 each) both spread over the slices."""
    from pyspark.sql import functions as F

    pid = F.spark_partition_id()
    sizes = {r[0]: r[1] or 0 for r in shuffled.groupBy(pid.alias("p"))
             .agg(F.sum(F.length("data"))).collect()}
    big = sorted(p for p, size in sizes.items() if size > max_job_bytes)
    filters = [pid.isin(group) for group in
               partition_groups({p: sizes[p] for p in sizes if p not in big}, max_job_bytes)]
    for p in big:
        k = SLICE_SPARE * -(-int(sizes[p]) // max_job_bytes)
        slice_of = F.pmod(F.col("rank") + F.col("part"), F.lit(k))
        slices = {r[0]: r[1] or 0 for r in shuffled.where(pid == p)
                  .groupBy(slice_of.alias("j")).agg(F.sum(F.length("data"))).collect()}
        filters += [(pid == p) & slice_of.isin(group)
                    for group in partition_groups(slices, max_job_bytes)]
    if not filters:
        yield to_arrow(shuffled.limit(0))
    for f in filters:
        yield to_arrow(shuffled.where(f))


def decode_ranks(table: pa.Table) -> tuple[dict, dict]:
    """Inverse of ``encode_arrays`` keeping every rank: ({rank: arrays}, {rank: info})."""
    decoder = RankDecoder()
    decoder.add(table)
    return decoder.result()


class RankDecoder:
    """Decodes ``RESULT_SCHEMA`` rows fed in any order and in any number of tables
    (:meth:`add`) into every rank's arrays and info (:meth:`result`).

    Each array is allocated once, from the dtype and shape its chunks carry, and every chunk
    is copied from the Arrow buffer straight to its place (``part * CHUNK_BYTES``): one copy
    of the result, and the caller may drop each table once it is added. The arrays are
    writable (numba compiles another version of a kernel for read-only arrays)."""

    def __init__(self) -> None:
        self._arrays: dict = {}   # (rank, name) -> [array, uint8 view, bytes filled, parts]
        self._small: dict = {}    # (rank, name) -> (dtype, shape, {part: bytes}): info, 'U'

    def add(self, table: pa.Table) -> None:
        for batch in table.to_batches():
            if batch.num_rows == 0:
                continue
            cols = batch.select(["rank", "name", "dtype", "shape", "part"]).to_pydict()
            data = batch.column(batch.schema.get_field_index("data"))
            offsets, raw = _binary_buffers(data)
            for q, (r, name, dt, shape, part) in enumerate(zip(
                    cols["rank"], cols["name"], cols["dtype"], cols["shape"], cols["part"])):
                chunk = raw[offsets[q]:offsets[q + 1]]
                key = (r, name)
                if name == _INFO or dt == UNICODE:
                    self._small.setdefault(key, (dt, tuple(shape), {}))[2][part] = \
                        chunk.tobytes()
                    continue
                slot = self._arrays.get(key)
                if slot is None:
                    out = empty_array(dt, shape)
                    slot = self._arrays[key] = [out, out.reshape(-1).view(np.uint8), 0, set()]
                view, start = slot[1], int(part) * CHUNK_BYTES
                if part in slot[3] or start + chunk.size > view.size or part < 0:
                    raise ValueError(f"result array {name!r} of rank {r}: chunk {part} "
                                     f"({chunk.size} bytes) is repeated or outside its "
                                     f"{view.size} bytes")
                view[start:start + chunk.size] = chunk
                slot[2] += chunk.size
                slot[3].add(part)

    def result(self) -> tuple[dict, dict]:
        arrays: dict = {}
        infos: dict = {}
        for (r, name), (out, view, filled, _) in self._arrays.items():
            if filled != view.size:
                raise ValueError(f"result array {name!r} of rank {r}: {filled} of its "
                                 f"{view.size} bytes arrived")
            arrays.setdefault(r, {})[name] = out
        for (r, name), (dt, shape, parts) in self._small.items():
            payload = b"".join(parts[i] for i in sorted(parts))
            if name == _INFO:
                infos[r] = json.loads(payload.decode("utf-8"))
            else:
                arrays.setdefault(r, {})[name] = array_from_bytes(dt, shape, payload)
        self._arrays, self._small = {}, {}
        return arrays, infos


def _binary_buffers(col) -> tuple[np.ndarray, np.ndarray]:
    """(offsets int64, uint8 bytes) of an Arrow binary array, without copying the bytes."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.type not in (pa.binary(), pa.large_binary()):  # e.g. a binary view
        col = col.cast(pa.large_binary())
    n = len(col)
    if col.type == pa.large_binary():
        offsets = np.frombuffer(col.buffers()[1], np.int64, n + 1, col.offset * 8)
    else:
        offsets = np.frombuffer(col.buffers()[1], np.int32, n + 1, col.offset * 4)
    buf = col.buffers()[2]
    raw = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
    return offsets.astype(np.int64), raw


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux: VmHWM, reset-able per task)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def reset_peak_rss() -> bool:
    """Reset this process's peak RSS counter (Linux >= 4.0: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class TaskMemory:
    """A training task's memory figures for its info dict: made at the task's start, it
    resets the peak RSS counter (``reset_peak_rss``) and records the RSS then;
    ``info(**fields)`` is ``fields`` with the peak since (``peak_rss_bytes``),
    ``rss_start_bytes``, ``peak_rss_is_task_local`` (whether the reset worked, so the
    peak is this task's own) and ``task_seconds`` (wall clock since the start: how evenly a
    stage's tasks were loaded).

    ``kernels`` (groups of ``sparkxml_kernels.precompile``) are loaded first, so that the
    figures are the task's data and work, not the compiled code a fresh Python worker
    loads once (a task that ran earlier in the same worker loaded it already): the info
    then also has ``kernel_load_bytes`` (the RSS growth while loading) and
    ``kernel_load_seconds``."""

    def __init__(self, kernels: tuple = ()) -> None:
        self.kernel_fields: dict = {}
        if kernels:
            from sparkxml_kernels.precompile import load_kernels

            rss0, t0 = rss_bytes(), time.perf_counter()
            load_kernels(*kernels)
            self.kernel_fields = {"kernel_load_bytes": max(0, rss_bytes() - rss0),
                                  "kernel_load_seconds": time.perf_counter() - t0}
        self.task_local = reset_peak_rss()
        self.start_bytes = rss_bytes()
        self.start = time.perf_counter()

    def info(self, **fields) -> dict:
        return dict(fields, **self.kernel_fields, peak_rss_bytes=peak_rss_bytes(),
                    rss_start_bytes=self.start_bytes, peak_rss_is_task_local=self.task_local,
                    task_seconds=time.perf_counter() - self.start)


@dataclass
class BarrierResult:
    arrays: dict
    infos: list = field(default_factory=list)
    seconds: float = 0.0


def attempt_key(authkey: bytes, messages) -> bytes:
    """The key of one stage attempt: the per-fit key mixed with every task's gathered
    ``"host:port#nonce"`` message (the same list on every rank of that attempt only)."""
    import hashlib

    return hashlib.sha256(authkey + "|".join(messages).encode()).digest()


def make_barrier_task(load_fn, train_fn, authkey: bytes, timeout_s: float,
                      on_addresses=None, stream: bool = False, barrier: bool = True):
    """The function ``mapInArrow(..., barrier=True)`` runs (see the module docstring).

    ``on_addresses(rank, addresses)`` (tests only) runs in each task once the addresses are
    exchanged, before the ranks connect; it may return objects to ``close()`` when the task
    ends. ``stream=True``: ``train_fn(state, collective, rank, world_size)`` is a generator
    of Arrow record batches in the caller's own output schema, yielded while the collective
    is open (the caller then reports its own diagnostics). ``barrier=False``: the task runs
    in a plain stage, as the only worker (rank 0 of 1).
    """

    def task(batches):
        from pyspark import BarrierTaskContext, TaskContext

        from sparkxml_kernels.collective import LocalCollective, SocketCollective, open_listener
        from sparkxml_kernels.collective.rendezvous import Rendezvous, rendezvous_key

        if barrier:
            ctx = BarrierTaskContext.get()
            infos = ctx.getTaskInfos()
            world = len(infos)
        else:
            ctx = TaskContext.get()
            infos, world = None, 1
        rank = ctx.partitionId()
        reset_ok = reset_peak_rss()
        rss0 = rss_bytes()
        t0 = time.perf_counter()
        listener = None
        gather = None
        if world > 1:
            # Exchange addresses while the data loads, over sockets: Spark's allGather costs
            # ~1 s whatever happens (its barrier RPC is checked once a second)
            host = infos[rank].address.rsplit(":", 1)[0] or None
            listener, address = open_listener(host)
            gather = Rendezvous(rank, world, infos[0].address.rsplit(":", 1)[0] or "localhost",
                                rendezvous_key(authkey, ctx.stageId()),
                                f"{address}#{os.urandom(8).hex()}", timeout_s)
        coll = None
        opened = None
        try:
            state = load_fn(batches, rank, world)
            t_load = time.perf_counter() - t0
            peak_load = peak_rss_bytes()
            if gather is not None:
                messages = gather.result()
                addresses = [m.rsplit("#", 1)[0] for m in messages]
                t_gather = time.perf_counter() - t0
                if on_addresses is not None:
                    opened = on_addresses(rank, addresses)
                coll = SocketCollective(rank, world, addresses,
                                        attempt_key(authkey, messages), timeout_s,
                                        listener=listener)
                listener = None  # owned (and closed) by the collective
            else:
                t_gather = 0.0
                coll = LocalCollective()
            t_connected = time.perf_counter() - t0
            if stream:
                yield from train_fn(state, coll, rank, world)
                return
            t1 = time.perf_counter()
            arrays, info = train_fn(state, coll, rank, world)
            t_train = time.perf_counter() - t1
        finally:
            if coll is not None:
                coll.close()
            if listener is not None:
                listener.close()
            if gather is not None:
                gather.close()  # (a no-op once the addresses were exchanged)
            for obj in opened or ():
                obj.close()
        info = dict(info or {})
        info.update(rank=rank, world_size=world, load_seconds=t_load,
                    allgather_done_seconds=t_gather, connected_seconds=t_connected,
                    train_seconds=t_train,
                    rss_start_bytes=rss0, peak_rss_after_load_bytes=peak_load,
                    peak_rss_bytes=peak_rss_bytes(),
                    peak_rss_is_task_local=reset_ok,
                    bytes_sent=getattr(coll, "bytes_sent", 0),
                    bytes_received=getattr(coll, "bytes_received", 0),
                    peer_wait_seconds=getattr(coll, "wait_seconds", 0.0))
        yield from encode_array_batches(rank, arrays if rank == 0 else None, info)

    return task


def run_barrier_training(df, num_workers: int, load_fn, train_fn, *, timeout_s: float,
                         authkey: bytes | None = None, repartition: bool = True,
                         on_addresses=None, coalesce_single: bool = False) -> BarrierResult:
    """Run ONE barrier stage over ``num_workers`` partitions of ``df``; return rank 0's arrays.

    Parameters
    ----------
    df : DataFrame
        Only the columns ``load_fn`` needs (select them first: less to shuffle).
    num_workers : int
        Number of barrier tasks; each needs a free task slot at the same time.
    load_fn(batches, rank, world_size) -> state
    train_fn(state, collective, rank, world_size) -> (arrays or None, info dict)
    timeout_s : float
        Bound on every wait for a peer inside training.
    repartition : bool
        ``df.repartition(num_workers)`` first (default). Pass False when ``df`` already has
        exactly ``num_workers`` partitions laid out as wanted (e.g. by query group).
    on_addresses : callable, optional
        Test hook, see ``make_barrier_task``.
    coalesce_single : bool
        With ``num_workers == 1``: the one task reads every input
        partition in turn (``coalesce(1)``, in a plain stage) instead of Spark shuffling all
        rows into one partition first (for 1M x 50 doubles, seconds of shuffle write and
        read). A barrier stage cannot coalesce (SPARK-24820), and one task needs no gang
        scheduling. Rows then arrive in input order rather than the shuffle's order, and
        the fit is one Spark job (no shuffle before or after the task).
    """
    from sparkxml_kernels.collective import new_authkey

    authkey = authkey or new_authkey()
    plain = coalesce_single and int(num_workers) == 1
    task = make_barrier_task(load_fn, train_fn, authkey, float(timeout_s), on_addresses,
                             barrier=not plain)
    if plain:
        df = df.coalesce(1)
    elif repartition:
        df = df.repartition(int(num_workers))
    t0 = time.perf_counter()
    out = df.mapInArrow(task, RESULT_SCHEMA, barrier=not plain)
    if not plain:
        out = out.repartition(1)  # makes the barrier stage a retryable ShuffleMapStage
    # (a plain stage's failed task is retried alone: one job, no shuffle)
    out = to_arrow(out)
    seconds = time.perf_counter() - t0
    arrays, infos = decode_arrays(out)
    return BarrierResult(arrays, infos, seconds)
