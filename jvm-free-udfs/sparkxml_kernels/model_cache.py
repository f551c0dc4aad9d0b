"""Model arrays in Spark's Python workers: loaded once per process, memory-mapped per node.

A model's ``transform`` ships a ``ModelHandle`` in its task closure instead of the arrays
(``sparkxml._core.serving`` decides which). A handle either carries a small model's arrays itself
(``inline``), or names a saved model directory (``source``, as pyarrow opens it, plus the
``save_id`` its metadata must hold). In a task:

- ``handle.build(key, factory)`` returns ``factory(arrays)`` (e.g. a predictor), built once
  per Python worker process and kept while the process lives (Spark reuses its Python
  workers, ``spark.python.worker.reuse``); the last ``MAX_MODELS`` models are kept.
- the arrays of a directory are decoded once per node into a cache directory of ``.npy``
  files (``<root>/sparkxml-models/<save_id>/``; root: ``$SPARKXML_MODEL_CACHE_DIR``, else
  the executor's first ``SPARK_LOCAL_DIRS`` entry, else the temp directory), under a file
  lock so that one worker decodes and the others wait, then every worker maps them
  copy-on-write (``np.load(mmap_mode="c")``): the workers of a node share one copy of the
  model in the page cache, and the arrays stay writable (numba compiles another version of a
  kernel for read-only arrays).

``load_events()`` lists the loads this process made (a test hook); with a handle's ``log``
set (``spark.sparkxml.modelLoadLog``), each load also appends one JSON line (pid, source,
save id, whether the node cache was hit, seconds) to that file on the worker's node.

This module never imports pyspark.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict

import numpy as np

MAX_MODELS = 4  # models (and things built from them) kept per worker process
NODE_CACHE_KEEP = 4  # decoded models kept per node cache directory
_MMAP_MIN_BYTES = 1 << 16  # smaller arrays are read, not mapped

_lock = threading.Lock()
_arrays: OrderedDict = OrderedDict()  # (source, save_id) -> dict of arrays
_built: OrderedDict = OrderedDict()  # (token, key) -> object
_events: list = []


class ModelHandle:
    """Plain, picklable access to a model's arrays from a Spark task.

    Parameters
    ----------
    inline : dict of ndarray, optional
        The arrays themselves (small models: the closure is the cheapest way).
    source : str, optional
        A saved model directory as ``pyarrow`` opens it on the executors (local path, FUSE
        path, or a pyarrow URI).
    save_id : str, optional
        The ``saveId`` the directory's metadata must hold.
    token : str
        Identifies the model for the per-process cache (the save id for a directory).
    log : str, optional
        A file each load appends a JSON line to (diagnostics).
    """

    __slots__ = ("inline", "source", "save_id", "token", "log", "nbytes")

    def __init__(self, *, inline: dict | None = None, source: str | None = None,
                 save_id: str | None = None, token: str | None = None,
                 log: str | None = None, nbytes: int = 0):
        if (inline is None) == (source is None):
            raise ValueError("a ModelHandle holds either inline arrays or a source directory")
        if source is not None and not save_id:
            raise ValueError("a source directory needs its save id")
        self.inline = inline
        self.source = source
        self.save_id = save_id
        self.token = token or save_id or uuid.uuid4().hex
        self.log = log
        self.nbytes = int(nbytes)

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        where = f"source={self.source!r}, save_id={self.save_id!r}" if self.source else \
            f"inline {self.nbytes} bytes"
        return f"ModelHandle({where})"

    def arrays(self) -> dict:
        """The model's arrays (cached per process for a directory)."""
        if self.inline is not None:
            return self.inline
        key = (self.source, self.save_id)
        with _lock:
            if key in _arrays:
                _arrays.move_to_end(key)
                return _arrays[key]
        arrays = _load(self)
        with _lock:
            _arrays[key] = arrays
            while len(_arrays) > MAX_MODELS:
                _arrays.popitem(last=False)
        return arrays

    def build(self, key, factory):
        """``factory(self.arrays())``, built once per process for this model and ``key``
        (``key``: a hashable of whatever else the factory depends on)."""
        k = (self.token, key)
        with _lock:
            if k in _built:
                _built.move_to_end(k)
                return _built[k]
        obj = factory(self.arrays())
        with _lock:
            _built[k] = obj
            while len(_built) > MAX_MODELS:
                _built.popitem(last=False)
        return obj


def as_handle(model) -> ModelHandle:
    """``model`` if it is a ``ModelHandle``, else a handle carrying the dict of arrays
    ``model`` inline (task functions accept either)."""
    return model if isinstance(model, ModelHandle) else ModelHandle(inline=model)


def load_events() -> list:
    """The loads from a directory this process made: dicts with pid, source, save_id,
    node_cache ("hit", "miss"), seconds, nbytes."""
    return list(_events)


def clear() -> None:
    """Forget every cached model of this process (tests)."""
    with _lock:
        _arrays.clear()
        _built.clear()


def _load(handle: ModelHandle) -> dict:
    t0 = time.perf_counter()
    d = node_cache_dir(handle.save_id)
    for attempt in range(2):
        hit = os.path.isdir(d)
        if not hit:
            hit = _decode_to_node_cache(handle, d)
        try:
            arrays = _map(d, handle.save_id)
            break
        except FileNotFoundError:  # evicted by another worker meanwhile: decode again
            if attempt:
                raise
    event = {"pid": os.getpid(), "source": handle.source, "save_id": handle.save_id,
             "node_cache": "hit" if hit else "miss",
             "seconds": round(time.perf_counter() - t0, 4),
             "nbytes": int(sum(a.nbytes for a in arrays.values()))}
    _events.append(event)
    if handle.log:
        try:
            with open(handle.log, "a") as f:
                f.write(json.dumps(event) + "\n")
        except OSError:
            pass  # diagnostics only
    try:
        os.utime(d)  # most recently used: kept by the node cache's eviction
    except OSError:
        pass
    return arrays


def node_cache_root() -> str:
    root = os.environ.get("SPARKXML_MODEL_CACHE_DIR")
    if not root:
        dirs = [x for x in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if x]
        root = dirs[0] if dirs else tempfile.gettempdir()
    return os.path.join(root, "sparkxml-models")


def node_cache_dir(save_id: str) -> str:
    if not save_id or not all(c in "0123456789abcdef" for c in save_id):
        raise ValueError(f"save id {save_id!r} is not a hex string")
    return os.path.join(node_cache_root(), save_id)


def _decode_to_node_cache(handle: ModelHandle, d: str) -> bool:
    """Decode the handle's directory into ``d`` (one worker per node; the others wait on the
    lock). Returns True when another worker had done it meanwhile."""
    from . import persist

    root = os.path.dirname(d)
    os.makedirs(root, exist_ok=True)
    with _node_lock(os.path.join(root, f".{handle.save_id}.lock")):
        if os.path.isdir(d):
            return True
        meta = persist.load_metadata(handle.source)
        persist.check_sparkxml(meta, handle.source)
        if meta.get("saveId") != handle.save_id:
            raise persist.ModelFormatError(
                f"{handle.source} was overwritten after this model was loaded or saved (save "
                f"id {handle.save_id}, the directory now holds {meta.get('saveId')}): load "
                f"the model again")
        arrays = persist.load_arrays(handle.source, meta=meta)
        tmp = os.path.join(root, f".{handle.save_id}.tmp-{uuid.uuid4().hex}")
        os.makedirs(tmp)
        try:
            names = []
            for i, (name, a) in enumerate(arrays.items()):
                np.save(os.path.join(tmp, f"{i}.npy"), a, allow_pickle=False)
                names.append(name)
            with open(os.path.join(tmp, "manifest.json"), "w") as f:
                json.dump({"save_id": handle.save_id, "names": names}, f)
            os.rename(tmp, d)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _evict(root, keep=d)
    return False


def _map(d: str, save_id: str) -> dict:
    with open(os.path.join(d, "manifest.json")) as f:
        manifest = json.load(f)
    if manifest.get("save_id") != save_id:
        raise ValueError(f"node cache {d} holds save {manifest.get('save_id')}, not {save_id}")
    out = {}
    for i, name in enumerate(manifest["names"]):
        f = os.path.join(d, f"{i}.npy")
        big = os.path.getsize(f) >= _MMAP_MIN_BYTES
        a = np.load(f, mmap_mode="c" if big else None, allow_pickle=False)
        out[name] = np.asarray(a)  # a plain ndarray over the mapping
    return out


def _evict(root: str, keep: str) -> None:
    """Keep the ``NODE_CACHE_KEEP`` most recently used decoded models of this node (a worker
    still mapping a deleted one keeps its mapping)."""
    try:
        entries = [os.path.join(root, n) for n in os.listdir(root) if not n.startswith(".")]
        entries = [e for e in entries if os.path.isdir(e) and e != keep]
        entries.sort(key=lambda e: os.path.getmtime(e), reverse=True)
        for e in entries[NODE_CACHE_KEEP - 1:]:
            shutil.rmtree(e, ignore_errors=True)
    except OSError:
        pass


class _node_lock:
    """An exclusive ``flock`` on ``path`` (no lock where fcntl is unavailable)."""

    def __init__(self, path: str):
        self.path = path
        self.f = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return self
        self.f = open(self.path, "a")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.f is not None:
            self.f.close()  # releases the lock
        return False
