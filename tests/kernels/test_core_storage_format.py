"""The saved-model format without Spark (``sparkxml_kernels.persist``) and the executors'
model cache (``sparkxml_kernels.model_cache``): round trips of every storable dtype in
several chunks, formatVersion 1 directories, the path mapping for Databricks and Hadoop
URIs, and loading a model directory once per process, memory-mapped from one decoded copy.
"""
import io
import json
import os
import pickle

import numpy as np
import pyarrow.parquet as pq
import pytest

import sparkxml_kernels
from sparkxml_kernels import model_cache, persist
from sparkxml_kernels.fastxml.forest import train_forest
from sparkxml_kernels.fastxml.predictor import FastXMLPredictor
from sparkxml_kernels.model_cache import ModelHandle

META = persist.metadata_json("x.Model", "uid1", {}, {}, model_kind="gbt")


def _arrays():
    rng = np.random.default_rng(0)
    return {"f64": rng.normal(size=(300, 7)), "i32": np.arange(20000, dtype=np.int32),
            "u8": rng.integers(0, 255, 3001).astype(np.uint8), "b": rng.random(17) > 0.5,
            "empty": np.zeros((0, 3), np.float32), "scalar": np.asarray(7, np.int64),
            "name": np.asarray("logistic"), "names": np.array(["ab", "c"]),
            "f32": rng.normal(size=4099).astype(np.float32)}


def _assert_same(got, want):
    assert list(got) == list(want)
    for k, v in want.items():
        v = np.asarray(v)
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        np.testing.assert_array_equal(got[k], v)
        assert got[k].flags.writeable, k  # numba would compile a read-only variant


def test_round_trip_in_many_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(persist, "CHUNK_BYTES", 1024)
    monkeypatch.setattr(persist, "GROUP_BYTES", 4096)
    arrays = _arrays()
    path = str(tmp_path / "m")
    save_id = persist.save_directory(path, META, arrays, overwrite=False)
    meta = persist.load_metadata(path)
    assert meta["formatVersion"] == 2 and meta["saveId"] == save_id
    assert meta["chunkBytes"] == 1024 and [a[0] for a in meta["arrays"]] == list(arrays)
    f = pq.ParquetFile(str(tmp_path / "m" / "data" / "part-00000.parquet"))
    n_chunks = sum(max(1, -(-np.asarray(a).nbytes // 1024)) for k, a in arrays.items()
                   if k != "name") + 1
    assert f.metadata.num_rows == n_chunks and f.metadata.num_row_groups > 1
    _assert_same(persist.load_arrays(path), arrays)
    assert sorted(os.listdir(tmp_path)) == ["m"]  # no hidden sibling left


def _v1_directory(path, arrays, class_name, kind, params=None):
    """A directory exactly as formatVersion 1 (sparkxml before this format) wrote it."""
    os.makedirs(os.path.join(path, "metadata"))
    os.makedirs(os.path.join(path, "data"))
    meta = json.loads(persist.metadata_json(class_name, "uid1", params or {}, {}, kind))
    meta["formatVersion"] = 1
    with open(os.path.join(path, "metadata", "part-00000"), "w") as f:
        f.write(json.dumps(meta) + "\n")
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with open(os.path.join(path, "data", "arrays.npz"), "wb") as f:
        f.write(buf.getvalue())


def _forest():
    from sparkxml.synthetic import make_multilabel

    (xi, xj, xv), (yi, yj) = make_multilabel(n_rows=200, n_features=50, n_labels=10, seed=2)
    forest = train_forest(xi, xj, xv, yi, yj, 50, 10, np.arange(2, dtype=np.int32))
    arrays = dict(forest, n_features=np.array(50), n_labels=np.array(10), bias=np.array(1.0))
    return arrays, (xi, xj, xv)


def test_format_version_1_directories_still_load(tmp_path):
    arrays, X = _forest()
    path = str(tmp_path / "v1")
    _v1_directory(path, arrays, "sparkxml.fastxml.FastXMLModel", "fastxml")
    _assert_same(persist.load_arrays(path), arrays)
    got = sparkxml_kernels.load_model(path).predictor.predict(*X, 3)
    want = FastXMLPredictor(arrays, 50, 10, 1.0).predict(*X, 3)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("given, opened", [
    ("dbfs:/models/m", "/dbfs/models/m"), ("dbfs:///models/m", "/dbfs/models/m"),
    ("file:/tmp/m", "/tmp/m"), ("file:///tmp/m", "/tmp/m"), ("s3a://bucket/m", "s3://bucket/m"),
    ("s3n://bucket/m", "s3://bucket/m"), ("/Volumes/c/s/v/m", "/Volumes/c/s/v/m"),
    ("dbfs:/Volumes/c/s/v/m", "/Volumes/c/s/v/m"),
    ("relative/m", "relative/m"), ("hdfs://nn:8020/m", "hdfs://nn:8020/m")])
def test_paths_as_pyarrow_opens_them(given, opened):
    assert persist.pyarrow_path(given) == opened


def test_load_model_reads_dbfs_uris_through_the_fuse_mount(tmp_path, monkeypatch):
    """``dbfs:/x`` is Databricks' ``/dbfs/x`` on the driver and every executor."""
    monkeypatch.setattr(persist, "DBFS_FUSE", str(tmp_path))
    arrays, X = _forest()
    persist.save_directory(str(tmp_path / "models" / "fx"),
                           persist.metadata_json("sparkxml.FastXMLModel", "u", {}, {}, "fastxml"),
                           arrays, overwrite=False)
    for uri in ("dbfs:/models/fx", "dbfs:///models/fx"):
        got = sparkxml_kernels.load_model(uri).predictor.predict(*X, 2)
        np.testing.assert_array_equal(got[0], FastXMLPredictor(arrays, 50, 10, 1.0)
                                      .predict(*X, 2)[0])


@pytest.fixture
def node_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKXML_MODEL_CACHE_DIR", str(tmp_path / "node"))
    model_cache.clear()
    yield tmp_path / "node" / "sparkxml-models"
    model_cache.clear()


def test_a_directory_is_loaded_once_per_process_and_mapped_from_one_node_copy(tmp_path,
                                                                             node_cache):
    arrays = _arrays()
    path = str(tmp_path / "m")
    save_id = persist.save_directory(path, META, arrays, overwrite=False)
    handle = ModelHandle(source=path, save_id=save_id)
    assert len(pickle.dumps(handle)) < 1000  # what a task closure carries
    before = len(model_cache.load_events())
    got = handle.arrays()
    _assert_same(got, arrays)
    assert isinstance(got["i32"].base, np.memmap)  # mapped, copy-on-write
    assert handle.arrays() is got  # cached in this process
    events = model_cache.load_events()[before:]
    assert [e["node_cache"] for e in events] == ["miss"]
    assert [n for n in os.listdir(node_cache) if not n.startswith(".")] == [save_id]
    # another worker process on the node: maps the decoded copy, reads nothing else
    model_cache.clear()
    os.rename(path, path + ".gone")
    _assert_same(ModelHandle(source=path, save_id=save_id).arrays(), arrays)
    assert model_cache.load_events()[-1]["node_cache"] == "hit"
    # build() makes one object per process and key
    built = [handle.build(("sum", 1), lambda a: [a["i32"].sum()]) for _ in range(2)]
    assert built[0] is built[1] and built[0] == [arrays["i32"].sum()]


def test_a_directory_overwritten_since_is_refused(tmp_path, node_cache):
    path = str(tmp_path / "m")
    old = persist.save_directory(path, META, {"a": np.arange(3)}, overwrite=False)
    persist.save_directory(path, META, {"a": np.arange(4)}, overwrite=True)
    with pytest.raises(persist.ModelFormatError, match="overwritten after"):
        ModelHandle(source=path, save_id=old).arrays()


def test_inline_handles_and_handle_checks():
    arrays = {"a": np.arange(3)}
    h = ModelHandle(inline=arrays)
    assert h.arrays() is arrays and h.build("k", lambda a: a["a"].sum()) == 3
    with pytest.raises(ValueError, match="either"):
        ModelHandle()
    with pytest.raises(ValueError, match="save id"):
        ModelHandle(source="/x")
