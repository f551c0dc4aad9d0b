"""Models in other libraries' formats (no pyspark; numpy only, except ONNX which builds its
graph with the ``onnx`` package).

One module per format:

xgboost_json   GBT ensembles as XGBoost JSON models (``xgboost.Booster(model_file=...)``)
lightgbm_text  GBT ensembles as LightGBM text models (``lightgbm.Booster(model_file=...)``)
onnx_trees     GBT ensembles as ONNX TreeEnsemble graphs (``onnxruntime.InferenceSession``)

:func:`export_model` writes a predictor in a named format to one file, atomically.
"""
from __future__ import annotations

from ._ensemble import write_file

FORMATS = ("xgboost-json", "lightgbm-text", "onnx")


def _serializer(fmt: str):
    if fmt == "xgboost-json":
        from .xgboost_json import dumps
        return dumps
    if fmt == "lightgbm-text":
        from .lightgbm_text import dumps
        return dumps
    if fmt == "onnx":
        from .onnx_trees import dumps
        return dumps
    raise ValueError(f"format must be one of {list(FORMATS)}, got {fmt!r}")


def export_bytes(pred, fmt: str, **options) -> bytes:
    """The file ``export_model`` would write, as bytes.

    Parameters
    ----------
    pred : TreeEnsemblePredictor
        A GBT engine model (``sparkxml_kernels.gbt.predictor``).
    fmt : {"xgboost-json", "lightgbm-text", "onnx"}
    **options
        Passed to the format's writer (``feature_names``; ``missing`` for LightGBM).
    """
    dumps = _serializer(fmt)
    from ..gbt.predictor import TreeEnsemblePredictor

    if not isinstance(pred, TreeEnsemblePredictor):
        raise TypeError(f"format {fmt!r} holds GBT models (TreeEnsemblePredictor), not "
                        f"{type(pred).__name__}")
    return dumps(pred, **options)


def export_model(pred, path: str, fmt: str, overwrite: bool = False, **options) -> None:
    """Write ``pred`` in format ``fmt`` to the file ``path`` (a local path or a URI that
    ``pyarrow.fs`` opens). The format and model are checked before anything is written;
    an existing file is replaced only with ``overwrite`` (locally through a rename, so a
    failed export keeps it)."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"path must be a non-empty string, got {path!r}")
    payload = export_bytes(pred, fmt, **options)
    write_file(path, payload, overwrite)


__all__ = ["FORMATS", "export_bytes", "export_model"]
