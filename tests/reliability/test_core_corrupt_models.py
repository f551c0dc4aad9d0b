"""Corrupted model directories: every load fails with ``persist.ModelFormatError`` naming the
path, from ``Model.load`` and from ``sparkxml_kernels.load_model`` alike; nothing loads that
would then loop, read outside its arrays, or predict NaN. Debris next to a model (what a
crashed save could leave) changes nothing: the same model loads.

Models are built here without Spark (kernels + ``Model.write()``, which needs no JVM).
"""
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

import sparkxml_kernels
from sparkxml.fastxml.fastxml import FastXMLModel
from sparkxml.gbt.estimators import GBTClassificationModel, GBTRegressionModel
from sparkxml.synthetic import make_multilabel
from sparkxml_kernels import binning, persist
from sparkxml_kernels.fastxml.forest import train_forest
from sparkxml_kernels.gbt import booster
from sparkxml_kernels.persist import ModelFormatError


def _gbt_predictor(n_classes=None):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    if n_classes:
        y = (X[:, 0] > 0).astype(float) + (n_classes > 2) * (X[:, 1] > 0.5)
        params = {"objective": "softmax" if n_classes > 2 else "logistic",
                  "numClasses": n_classes}
    else:
        y, params = X[:, 0] * 2 + X[:, 1], {}
    edges = binning.edges_from_sketch(binning.sketch(X, np.ones(len(X)), 32), 32)
    pred, _ = booster.train(binning.bin_data(X, edges), y, None, edges,
                            dict(params, maxIter=4, maxDepth=3, maxBins=32))
    return pred, X


@pytest.fixture(scope="module")
def gbt_dir(tmp_path_factory):
    pred, X = _gbt_predictor()
    path = str(tmp_path_factory.mktemp("gbt") / "model")
    GBTRegressionModel(pred).write().save(path)
    return path, X


@pytest.fixture(scope="module")
def fastxml_dir(tmp_path_factory):
    (xi, xj, xv), (yi, yj) = make_multilabel(n_rows=300, n_features=200, n_labels=20, seed=1)
    forest = train_forest(xi, xj, xv, yi, yj, 200, 20, np.arange(3, dtype=np.int32))
    path = str(tmp_path_factory.mktemp("fastxml") / "model")
    FastXMLModel._create(forest, 200, 20, 1.0).write().save(path)
    return path, (xi, xj, xv)


def _copy(src, tmp_path, name="copy"):
    dst = str(tmp_path / name)
    shutil.copytree(src, dst)
    return dst


def _rewrite(path, arrays, meta):
    """Rewrite the model at ``path`` in place (same save id) with ``arrays``/``meta``: the
    directory is consistent, only the arrays or metadata are what the test makes them."""
    import pyarrow.parquet as pq

    meta = json.loads(persist.finish_metadata(json.dumps(meta), arrays, meta["saveId"]))
    for f in os.listdir(os.path.join(path, "data")):
        os.remove(os.path.join(path, "data", f))
    pq.write_table(pa.Table.from_batches(list(persist.data_batches(arrays, meta["saveId"])),
                                         schema=persist.DATA_SCHEMA),
                   os.path.join(path, "data", "part-00000.parquet"))
    with open(os.path.join(path, "metadata", "part-00000"), "w") as fh:
        fh.write(json.dumps(meta) + "\n")


def _edit_arrays(path, change):
    meta = persist.load_metadata(path)
    arrays = {k: v.copy() for k, v in persist.load_arrays(path, meta=meta).items()}
    change(arrays)
    _rewrite(path, arrays, meta)


def _edit_rows(path, change):
    """Apply ``change`` to the data rows (an Arrow table) and write them back as they are."""
    import pyarrow.parquet as pq

    f = os.path.join(path, "data", "part-00000.parquet")
    table = change(pq.read_table(f))
    pq.write_table(table, f)


def _edit_meta(path, change):
    f = os.path.join(path, "metadata", "part-00000")
    with open(f) as fh:
        meta = json.loads(fh.readline())
    change(meta)
    with open(f, "w") as fh:
        fh.write(json.dumps(meta) + "\n")


def _assert_refused(path, model_class, *fragments):
    """Both loaders raise ModelFormatError naming ``path`` (and the ``fragments``)."""
    for load in (model_class.load, sparkxml_kernels.load_model):
        with pytest.raises(ModelFormatError) as info:
            load(path)
        msg = str(info.value)
        assert path in msg, (load, msg)
        for frag in fragments:
            assert frag in msg, (load, msg)


def _set(key, fn):
    def change(a):
        a[key] = fn(a[key])
    return change


def _cycle(a):
    a["left"] = a["left"].copy()
    a["left"][0] = 0  # the root is its own left child: predict_raw would never return


def _shared_child(a):
    t0 = slice(int(a["tree_offsets"][0]), int(a["tree_offsets"][1]))
    left, right = a["left"][t0], a["right"][t0]
    inner = np.flatnonzero(left >= 0)
    right[inner[0]] = left[inner[0]]  # two edges into one node: a node reached twice


def _backward_child(a):
    inner = np.flatnonzero(a["left"] >= 0)
    a["right"][inner[-1]] = 0 if inner[-1] > 0 else a["right"][inner[-1]]


def _leaf_nan(a):
    a["value"][np.flatnonzero(a["left"] < 0)[0]] = np.nan


GBT_CORRUPTIONS = {
    "cycle": (_cycle, "children must point forward"),
    "node reached twice": (_shared_child, "reached exactly once"),
    "backward child": (_backward_child, "children must point forward"),
    "child outside its tree": (_set("right", lambda r: np.where(r > 0, r + 10_000, r)),
                               "children must point forward"),
    "feature out of range": (_set("feature", lambda f: np.where(f >= 0, f + 100, f)),
                             "outside 0..3"),
    "negative feature": (_set("feature", lambda f: np.where(f >= 0, -5, f)), "feature -5"),
    "leaf value NaN": (_leaf_nan, "not finite"),
    "tree_offsets short": (_set("tree_offsets", lambda o: o[:-1]), "tree_offsets"),
    "node arrays differ in length": (_set("threshold", lambda t: t[:-1]), "threshold"),
    "strings for feature ids": (_set("feature", lambda f: np.array(["a"] * f.size)), ""),
    "n_outputs zero": (_set("n_outputs", lambda n: np.asarray(0, np.int64)), ""),
    "n_features a vector": (_set("n_features", lambda n: np.arange(3)), ""),
    "tree_outputs out of range": (_set("tree_outputs", lambda t: t + 7), "tree_outputs"),
    "missing array": (lambda a: a.pop("left"), "lacks"),
}


def _fx_children(fn):
    def change(a):
        ch = a["children"].reshape(-1, 2).copy()
        fn(ch, a)
        a["children"] = ch
    return change


def _fx_backward(ch, a):
    inner = np.flatnonzero(ch[:, 0] >= 0)
    ch[inner[-1], 1] = 0  # points back at the root


def _fx_twice(ch, a):
    inner = np.flatnonzero(ch[:, 0] >= 0)
    ch[inner[0], 1] = ch[inner[0], 0]


FASTXML_CORRUPTIONS = {
    "backward child": (_fx_children(_fx_backward), "children must point forward"),
    "node reached twice": (_fx_children(_fx_twice), "reached exactly once"),
    "one child": (_fx_children(lambda ch, a: ch.__setitem__((np.flatnonzero(ch[:, 0] >= 0)[0],
                                                             1), -1)), "both -1"),
    "label out of range": (_set("leaf_label", lambda v: v + 1000), "leaf_label"),
    "huge n_labels": (_set("n_labels", lambda v: np.asarray(2**40, np.int64)), "n_labels"),
    "w_indptr short": (_set("w_indptr", lambda v: v[:-1]), "w_indptr"),
    "NaN weight": (_set("w_value", lambda v: np.full_like(v, np.nan)), "non-finite"),
    "bias a vector": (_set("bias", lambda v: np.ones(3)), ""),
    "n_features a string": (_set("n_features", lambda v: np.asarray("ten")), ""),
    "tree_offsets past the nodes": (_set("tree_offsets", lambda o: o + 1), "tree_offsets"),
}


ARRAY_CORRUPTIONS = ([("gbt", case) for case in GBT_CORRUPTIONS]
                     + [("fastxml", case) for case in FASTXML_CORRUPTIONS])


@pytest.mark.parametrize("kind, case", ARRAY_CORRUPTIONS)
def test_corrupt_model_arrays_are_refused(request, tmp_path, kind, case):
    change, fragment = (GBT_CORRUPTIONS if kind == "gbt" else FASTXML_CORRUPTIONS)[case]
    path = _copy(request.getfixturevalue(f"{kind}_dir")[0], tmp_path)
    _edit_arrays(path, change)
    _assert_refused(path, GBTRegressionModel if kind == "gbt" else FastXMLModel, fragment)


def _truncate(rel, keep=0.5):
    def damage(path):
        f = os.path.join(path, rel)
        with open(f, "rb") as fh:
            raw = fh.read()
        with open(f, "wb") as fh:
            fh.write(raw[:int(len(raw) * keep)])
    return damage


def _write(rel, payload: bytes):
    def damage(path):
        with open(os.path.join(path, rel), "wb") as fh:
            fh.write(payload)
    return damage


def _meta(change):
    return lambda path: _edit_meta(path, change)


def _other_save(table):
    ids = pa.array(["0" * 32] + table.column("save_id").to_pylist()[1:], pa.string())
    return table.set_column(0, "save_id", ids)


def _drop_row(table):
    return table.slice(1)


def _repeat_row(table):
    return pa.concat_tables([table, table.slice(0, 1)])


def _shorten_chunk(table):
    data = table.column("data").to_pylist()
    data[-1] = data[-1][:-1]
    return table.set_column(6, "data", pa.array(data, pa.binary()))


def _huge_manifest(meta):
    meta["arrays"][0][2] = [2 ** 40]  # one TiB: refused before anything is allocated


DATA = "data/part-00000.parquet"
DIRECTORY_CORRUPTIONS = {
    "data truncated": (_truncate(DATA), "corrupt"),
    "data empty": (_write(DATA, b""), "corrupt"),
    "data garbage": (_write(DATA, os.urandom(300)), "corrupt"),
    "data missing": (lambda p: os.remove(os.path.join(p, DATA)), "no parquet file"),
    "data/ missing": (lambda p: shutil.rmtree(os.path.join(p, "data")), "incomplete"),
    "data of another save": (lambda p: _edit_rows(p, _other_save), "another save"),
    "a chunk missing": (lambda p: _edit_rows(p, _drop_row), "incomplete"),
    "a chunk twice": (lambda p: _edit_rows(p, _repeat_row), "chunks"),
    "a chunk short": (lambda p: _edit_rows(p, _shorten_chunk), "bytes, expected"),
    "manifest of a huge array": (lambda p: _edit_meta(p, _huge_manifest), "chunks"),
    "saveId missing": (lambda p: _edit_meta(p, lambda m: m.pop("saveId")), "saveId"),
    "chunkBytes zero": (lambda p: _edit_meta(p, lambda m: m.update(chunkBytes=0)),
                        "chunkBytes"),
    "metadata truncated": (_truncate("metadata/part-00000", 0.3), "corrupt"),
    "metadata not JSON": (_write("metadata/part-00000", b"\x00\xff garbage\n"), "corrupt"),
    "metadata a JSON list": (_write("metadata/part-00000", b"[1, 2]\n"), "corrupt"),
    "metadata missing": (lambda p: shutil.rmtree(os.path.join(p, "metadata")), "metadata"),
    "metadata a directory": (lambda p: (os.remove(os.path.join(p, "metadata", "part-00000")),
                                        os.mkdir(os.path.join(p, "metadata", "part-00000"))),
                             ""),
    "formatVersion text": (_meta(lambda m: m.update(formatVersion="one")), "formatVersion"),
    "formatVersion fraction": (_meta(lambda m: m.update(formatVersion=1.5)), "formatVersion"),
    "formatVersion from the future": (_meta(lambda m: m.update(formatVersion=99)),
                                      "upgrade"),
    "modelKind unknown": (_meta(lambda m: m.update(modelKind="svm9")), "svm9"),
    "modelKind not text": (_meta(lambda m: m.update(modelKind=[1])), "modelKind"),
    "unknown param": (_meta(lambda m: m["paramMap"].update(noSuchParam=3)), "noSuchParam"),
    "param of the wrong type": (_meta(lambda m: m["paramMap"].update(featuresCol=[1, 2])),
                                ""),
    "param out of range": (_meta(lambda m: m["paramMap"].update(maxIter=-4)), "maxIter"),
    "paramMap not a dict": (_meta(lambda m: m.update(paramMap=[1])), ""),
}


@pytest.mark.parametrize("case", list(DIRECTORY_CORRUPTIONS))
def test_corrupt_directories_are_refused(gbt_dir, tmp_path, case):
    damage, fragment = DIRECTORY_CORRUPTIONS[case]
    path = _copy(gbt_dir[0], tmp_path)
    damage(path)
    if case.startswith(("unknown param", "param", "paramMap")):
        # params live in the Spark ML metadata only: load_model reads the few it serves
        # with (missing, thresholds, topK, feature columns), so only a paramMap that is not
        # a JSON object stops it
        with pytest.raises(ModelFormatError) as info:
            GBTRegressionModel.load(path)
        assert path in str(info.value) and fragment in str(info.value), str(info.value)
        if case.startswith("paramMap"):
            with pytest.raises(ModelFormatError, match="paramMap is not a JSON object"):
                sparkxml_kernels.load_model(path)
        else:
            sparkxml_kernels.load_model(path)
    else:
        _assert_refused(path, GBTRegressionModel, fragment)


def test_a_different_models_directory_is_refused(gbt_dir, fastxml_dir):
    with pytest.raises(ModelFormatError, match="FastXMLModel, not a .*GBTClassificationModel"):
        GBTClassificationModel.load(fastxml_dir[0])
    with pytest.raises(ModelFormatError, match="GBTRegressionModel, not a .*FastXMLModel"):
        FastXMLModel.load(gbt_dir[0])


def test_debris_of_a_crashed_save_changes_nothing(gbt_dir, tmp_path):
    """Hidden siblings (what a save killed mid-way leaves) and a stray file inside the
    directory: the same model loads."""
    path = _copy(gbt_dir[0], tmp_path)
    _copy(gbt_dir[0], tmp_path, ".model.tmp-0123")
    os.makedirs(tmp_path / ".copy.old-4567" / "metadata")
    with open(os.path.join(path, "data", "notes.txt"), "w") as f:
        f.write("x")
    X = gbt_dir[1]
    expected = GBTRegressionModel.load(gbt_dir[0]).predictor.predict_raw(X)
    np.testing.assert_array_equal(GBTRegressionModel.load(path).predictor.predict_raw(X),
                                  expected)
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict_raw(X), expected)


def test_multiclass_model_round_trips_and_its_corruption_is_refused(tmp_path):
    pred, X = _gbt_predictor(n_classes=3)
    path = str(tmp_path / "multi")
    GBTClassificationModel(pred).write().save(path)
    np.testing.assert_array_equal(sparkxml_kernels.load_model(path).predict_raw(X),
                                  pred.predict_raw(X))
    _edit_arrays(path, _set("base_score", lambda b: b[:1]))
    _assert_refused(path, GBTClassificationModel)
