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
    "ffm": "sparkxml_kernels.fm.ffm:FFMPredictor.from_directory",
    "fields": "sparkxml_kernels.fm.fields:FieldVocabulary.from_directory",
    "fm_ranker": "sparkxml_kernels.fm.ranker:FMRankerPredictor.from_directory",
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
    ServedModel
        One API for every model kind (``sparkxml_kernels.serving``): ``predict(X)`` gives
        what the Spark model's ``transform`` puts in its prediction column, bit for bit;
        classifiers (GBT, trees and forests, FM / GBFM) add ``predict_proba(X)``; FastXML,
        PfastreXML, Parabel and Bonsai add ``predict_topk(X, k)`` -> (labels, scores), lists per row as
        ``transform`` gives them; ``predict_raw``, ``predict_contributions`` (SHAP) and
        ``predict_leaf`` where the family has them. An ``FMRankerModel`` serves
        ``predict(users, items, X=None)`` (scores) and ``recommend(users, k)``. ``X``: a numpy array, a scipy.sparse
        matrix or a pandas DataFrame of the training feature columns; wrong widths, dtypes,
        columns and NaN where the model refuses it raise ``ValueError`` naming the problem.
        ``.predictor`` is the family's kernel predictor. A ``FieldEncoderModel`` (an
        encoder) loads as a ``FieldVocabulary`` (``encode(columns)`` -> CSR).

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
    'ServedForest'
    >>> predictor.predict(np.array([[5.0, 1.0], [6.0, 3.0]]))
    array([3., 9.])
    >>> import pandas as pd
    >>> predictor.predict(pd.DataFrame({"x1": [1.0, 3.0], "x0": [5.0, 6.0]}))
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
        from .serving import serve

        return serve(kind, obj(path, meta), meta)
    except LOAD_ERRORS as e:
        raise as_format_error(path, e) from (e if isinstance(e, OSError) else None)


__all__ = ["load_model", "ModelFormatError", "load_arrays", "load_metadata"]
