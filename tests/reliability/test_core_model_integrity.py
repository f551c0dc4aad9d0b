"""Model directories whose bytes changed after the save never load silently: every data chunk
is checked against its CRC-32 from the metadata, through ``Model.load`` and through
``sparkxml_kernels.load_model``; directories saved before the checksums still load.
``load_model`` also refuses metadata whose class is not a model of its kind, or whose params
the predictor reads are invalid, as ``Model.load`` does.

Models are built here without Spark (kernels + ``Model.write()``, which needs no JVM).
"""
import glob
import math
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _model_dirs import edit_meta

import sparkxml
import sparkxml_kernels
from sparkxml.forest.forest import RandomForestRegressionModel
from sparkxml.gbt.estimators import GBTRegressionModel
from sparkxml_kernels import binning, model_kinds
from sparkxml_kernels.collective import LocalCollective
from sparkxml_kernels.forest import criteria, forest, histogram
from sparkxml_kernels.forest.bins import as_float32, exact_edges
from sparkxml_kernels.forest.predictor import ForestPredictor
from sparkxml_kernels.forest.tree import SplitParams
from sparkxml_kernels.gbt import booster
from sparkxml_kernels.persist import ModelFormatError

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                          "golden")


def _forest_model():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] * 2 - X[:, 1]
    edges, vals = exact_edges(X, 256)
    Xb = binning.bin_data(as_float32(X), edges)
    p = SplitParams(criteria.criterion_id("squared_error"), max_features=2, max_depth=6)
    res, _ = forest.grow_forest(Xb, np.zeros(300, np.int32), y, histogram.ylny(y),
                                np.ones(300), np.arange(300), p, 5, 3, True, 1.0,
                                LocalCollective(), vals, edges)
    pred = ForestPredictor.from_arrays(dict({k: v for k, v in res.items() if k != "bin"},
                                            n_features=4, n_classes=0,
                                            criterion="squared_error"))
    return RandomForestRegressionModel(pred)


def _gbt_model():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    edges = binning.edges_from_sketch(binning.sketch(X, np.ones(len(X)), 32), 32)
    pred, _ = booster.train(binning.bin_data(X, edges), X[:, 0] * 2 + X[:, 1], None, edges,
                            dict(maxIter=4, maxDepth=3, maxBins=32))
    return GBTRegressionModel(pred)


MODELS = {"forest": (_forest_model, RandomForestRegressionModel),
          "gbt": (_gbt_model, GBTRegressionModel)}


@pytest.fixture(scope="module", params=sorted(MODELS))
def saved(request, tmp_path_factory):
    make, cls = MODELS[request.param]
    path = str(tmp_path_factory.mktemp(request.param) / "model")
    make().write().save(path)
    return path, cls


def _arrays(pred):
    return {k: np.asarray(v) for k, v in pred.to_arrays().items()}


def _same(a, b):
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
        and (a[k].tobytes() == b[k].tobytes()) for k in a)


def test_metadata_lists_a_checksum_per_chunk(saved):
    path, _ = saved
    meta = sparkxml_kernels.load_metadata(path)
    n_rows = pq.ParquetFile(os.path.join(path, "data", "part-00000.parquet")).metadata.num_rows
    assert len(meta["chunkCrc32"]) == n_rows > 0


def test_changed_chunk_bytes_are_refused_by_both_loaders(saved, tmp_path):
    """The parquet file stays valid; only the bytes of one array chunk differ (what a disk,
    a copy or a hand edit can do and that nothing else would notice)."""
    path, cls = saved
    dst = str(tmp_path / "m")
    shutil.copytree(path, dst)
    f = os.path.join(dst, "data", "part-00000.parquet")
    table = pq.read_table(f)
    data = table.column("data").to_pylist()
    i = int(np.argmax([len(d) for d in data]))
    raw = bytearray(data[i])
    raw[len(raw) // 2: len(raw) // 2 + 16] = b"\xa5" * 16
    data[i] = bytes(raw)
    table = table.set_column(table.schema.get_field_index("data"), "data",
                             pa.array(data, pa.binary()))
    pq.write_table(table, f)
    for load in (cls.load, sparkxml_kernels.load_model):
        with pytest.raises(ModelFormatError, match="does not match its checksum") as e:
            load(dst)
        assert dst in str(e.value)


def test_overwritten_file_bytes_never_load_other_numbers(saved, tmp_path):
    """16 bytes of 0xA5 written over the data file at each of 25 offsets: a load either fails
    with a ModelFormatError naming the path or returns exactly the saved arrays. (Without
    the checksums, 3 to 5 of these offsets loaded other numbers silently.)"""
    path, cls = saved
    ref = _arrays(sparkxml_kernels.load_model(path))
    for fraction in np.linspace(0.02, 0.98, 25):
        dst = str(tmp_path / f"m{fraction:.2f}")
        shutil.copytree(path, dst)
        f = os.path.join(dst, "data", "part-00000.parquet")
        size = os.path.getsize(f)
        with open(f, "r+b") as fh:
            fh.seek(min(int(size * fraction), size - 16))
            fh.write(b"\xa5" * 16)
        for load, pred_of in ((cls.load, lambda m: m.predictor),
                              (sparkxml_kernels.load_model, lambda p: p)):
            try:
                got = pred_of(load(dst))
            except ModelFormatError as e:
                assert dst in str(e)
                continue
            assert _same(_arrays(got), ref), (load, fraction)


GOLDEN = sorted(p for p in glob.glob(os.path.join(GOLDEN_DIR, "*", "model"))
                if os.path.isdir(os.path.join(p, "data")))


@pytest.mark.skipif(not GOLDEN, reason="no golden model directories")
def test_directories_saved_before_checksums_still_load():
    # golden directories of model kinds added after the checksums carry them; the older
    # ones were saved without, and must still load
    before = [p for p in GOLDEN if "chunkCrc32" not in sparkxml_kernels.load_metadata(p)]
    assert len(before) >= 10, before
    for path in before:
        assert sparkxml_kernels.load_model(path) is not None, path


def test_class_of_another_kind_is_refused(saved, tmp_path):
    path, cls = saved
    dst = str(tmp_path / "m")
    shutil.copytree(path, dst)
    edit_meta(dst, lambda m: m.update({"class": "sparkxml.LinearSVCModel"}))
    with pytest.raises(ModelFormatError, match=r"holds a sparkxml.LinearSVCModel, which is not "
                                               r"a '(forest|gbt)' model") as e:
        sparkxml_kernels.load_model(dst)
    assert dst in str(e.value)
    with pytest.raises(ModelFormatError):
        cls.load(dst)


@pytest.mark.skipif(not os.path.isdir(os.path.join(GOLDEN_DIR, "pfastrexml", "model")),
                    reason="no golden PfastreXML directory")
@pytest.mark.parametrize("param, value", [("gamma", -1.0), ("alpha", 1.5),
                                          ("numCandidates", 0), ("gamma", "abc")])
def test_invalid_predictor_params_are_refused(tmp_path, param, value):
    from sparkxml import PfastreXMLModel

    dst = str(tmp_path / "m")
    shutil.copytree(os.path.join(GOLDEN_DIR, "pfastrexml", "model"), dst)
    edit_meta(dst, lambda m: m["paramMap"].update({param: value}))
    with pytest.raises(ModelFormatError, match=rf"param {param}=.* is invalid") as e:
        sparkxml_kernels.load_model(dst)
    assert dst in str(e.value)
    with pytest.raises(ModelFormatError, match=param):
        PfastreXMLModel.load(dst)


def test_kind_table_and_param_rules_follow_the_spark_classes():
    from sparkxml._core.base import SparkXMLModel
    from sparkxml._core.constraints import constraints_of

    exported = [getattr(sparkxml, n) for n in dir(sparkxml) if n.endswith("Model")]
    models = {c for c in exported if isinstance(c, type) and issubclass(c, SparkXMLModel)}
    assert len(models) >= 15
    for c in models:
        assert c.__name__ in model_kinds.KIND_CLASSES[c._model_kind], c
    probes = [-1, 0, 1, 5, -1.5, 0.0, 0.5, 1.0, 2.0, 30.0, math.nan, math.inf]
    by_kind = {c._model_kind: c for c in models}
    for kind, rules in model_kinds.PREDICTOR_PARAMS.items():
        spark_rules = constraints_of(by_kind[kind])
        for name, (ok, _) in rules.items():
            if name not in spark_rules:
                continue  # a bool param (no rule on the Spark side)
            for v in probes:
                if name == "numCandidates" and isinstance(v, float):
                    continue  # its typeConverter makes ints
                try:
                    want = bool(spark_rules[name].ok(v))
                except TypeError:
                    want = False
                assert ok(v) == want, (kind, name, v)
