"""sparkxml_kernels: the numpy/numba code that runs inside Spark's Python workers.

This package never imports pyspark (a test enforces it), so the same kernels serve models
without a JVM: ``load_model(path)`` reads any directory a sparkxml model was saved to and
returns a predictor.
"""
from __future__ import annotations

from .persist import ModelFormatError, check_sparkxml, load_arrays, load_metadata

__version__ = "0.1.0"

# modelKind (written in the model's metadata) -> "module:callable(path, metadata) -> predictor"
_LOADERS = {
    "fastxml": "sparkxml_kernels.fastxml.predictor:FastXMLPredictor.from_directory",
    "gbt": "sparkxml_kernels.gbt.predictor:TreeEnsemblePredictor.from_directory",
}


def load_model(path: str):
    """Load a saved sparkxml model directory without Spark.

    Parameters
    ----------
    path : str
        Local path or URI of a directory written by ``Model.write().save(path)``.

    Returns
    -------
    predictor
        For FastXML a ``FastXMLPredictor`` whose ``predict(X_csr, k)`` returns
        (labels int32 (n, k), scores float32 (n, k)), best first. For the GBT engine's
        models a ``gbt.predictor.TreeEnsemblePredictor``: ``predict_raw(X)``,
        ``predict(X)``, ``predict_contributions(X)`` (SHAP), ``predict_leaf(X)``.

    Raises
    ------
    ModelFormatError
        The directory is missing, corrupt, or was not written by sparkxml.
    """
    import importlib

    meta = load_metadata(path)
    check_sparkxml(meta, path)
    kind = meta["modelKind"]
    if kind not in _LOADERS:
        raise ModelFormatError(f"{path} holds an unknown model kind {kind!r}")
    mod, attr = _LOADERS[kind].split(":")
    obj = importlib.import_module(mod)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj(path, meta)


__all__ = ["load_model", "ModelFormatError", "load_arrays", "load_metadata"]
