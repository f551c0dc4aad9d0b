"""sparkxml_kernels: the numpy/numba code that runs inside Spark's Python workers.

This package never imports pyspark (a test enforces it), so the same kernels serve models
without a JVM: ``load_model(path)`` reads any directory a sparkxml model was saved to and
returns a predictor.
"""
from __future__ import annotations

from typing import Any

from .model_kinds import check_kind
from .persist import (
    LOAD_ERRORS,
    ModelFormatError,
    as_format_error,
    check_sparkxml,
    load_arrays,
    load_metadata,
)

__version__ = "0.1.0"

# modelKind (written in the model's metadata) -> "module:callable(path, metadata) -> predictor"
_LOADERS = {
    "fastxml": "sparkxml_kernels.fastxml.predictor:FastXMLPredictor.from_directory",
    "pfastrexml": "sparkxml_kernels.fastxml.pfastre:PfastreXMLPredictor.from_directory",
    "parabel": "sparkxml_kernels.labeltree.predictor:LabelTreePredictor.from_directory",
    "bonsai": "sparkxml_kernels.labeltree.predictor:LabelTreePredictor.from_directory",
    "gbt": "sparkxml_kernels.gbt.predictor:TreeEnsemblePredictor.from_directory",
    "linear_svm": "sparkxml_kernels.linear.predictor:LinearSVCPredictor.from_directory",
    "fm": "sparkxml_kernels.fm.predictor:FMPredictor.from_directory",
    "gbfm": "sparkxml_kernels.fm.predictor:GBFMPredictor.from_directory",
    "fields": "sparkxml_kernels.fm.fields:FieldVocabulary.from_directory",
    "forest": "sparkxml_kernels.forest.predictor:ForestPredictor.from_directory",
}


def load_model(path: str) -> Any:
    """Load a saved sparkxml model directory without Spark.

    Parameters
    ----------
    path : str
        A directory written by ``Model.write().save(path)`` (formatVersion 1 or 2), as
        pyarrow reaches it: a local path (also Databricks' ``/dbfs/...`` and ``/Volumes/...``
        FUSE paths), ``file://``, ``dbfs:/`` (read through ``/dbfs``), or a ``pyarrow.fs``
        URI (``hdfs://``, ``s3://`` and ``s3a://``, ``gs://``, ``abfs://``).

    Returns
    -------
    predictor
        For FastXML a ``FastXMLPredictor`` whose ``predict(X_csr, k)`` returns
        (labels int32 (n, k), scores float32 (n, k)), best first; for PfastreXML a
        ``PfastreXMLPredictor`` with the same ``predict``. For Parabel / Bonsai a
        ``LabelTreePredictor``: ``predict(indptr, indices, data, k)`` as FastXML's and
        ``predict_topk(X, k)`` (per row the lists ``transform`` writes). For FM / GBFM an
        ``FMPredictor`` / ``GBFMPredictor`` (``predict(X)``: values, or (n, 2) class
        probabilities); for a ``FieldEncoderModel`` a ``FieldVocabulary``
        (``encode(columns)`` -> CSR).
        For trees and forests a ``ForestPredictor`` (``predict``, ``predict_values``,
        ``tree_arrays(i)``). For the GBT engine's models a
        ``gbt.predictor.TreeEnsemblePredictor``: ``predict_raw(X)``, ``predict(X)``,
        ``predict_contributions(X)`` (SHAP), ``predict_leaf(X)``.

    Raises
    ------
    ModelFormatError
        The directory is missing, unreadable, corrupt, or was not written by sparkxml; the
        message names the path. The metadata's class must be a model of its kind and the
        params the predictor reads must be valid, as ``Model.load`` checks; every data chunk
        must match its checksum (directories saved before checksums load unchecked); the
        model's arrays are checked before anything is returned (sizes, ids in range, tree
        structure: no load can return a predictor that would loop or read outside its
        arrays).

    Examples
    --------
    A tree trained and saved with Spark, then served by numpy alone:

    >>> import tempfile
    >>> from sparkxml import DecisionTreeRegressor
    >>> rows = [(float(i), float(i % 4), 3.0 * (i % 4)) for i in range(24)]
    >>> df = spark.createDataFrame(rows, ["x0", "x1", "label"])
    >>> model = DecisionTreeRegressor(featuresCols=["x0", "x1"], maxDepth=2).fit(df)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     model.write().save(tmp + "/tree")
    ...     predictor = load_model(tmp + "/tree")
    >>> type(predictor).__name__
    'ForestPredictor'
    >>> predictor.predict(np.array([[5.0, 1.0], [6.0, 3.0]]))
    array([3., 9.])
    """
    import importlib

    try:
        meta = load_metadata(path)
        check_sparkxml(meta, path)
        kind = meta["modelKind"]
        if kind not in _LOADERS:
            raise ModelFormatError(f"{path} holds an unknown model kind {kind!r}")
        check_kind(meta, path)
        mod, attr = _LOADERS[kind].split(":")
        obj: Any = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj(path, meta)
    except LOAD_ERRORS as e:
        raise as_format_error(path, e) from (e if isinstance(e, OSError) else None)


__all__ = ["load_model", "ModelFormatError", "load_arrays", "load_metadata"]
