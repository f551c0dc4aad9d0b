"""Models in other libraries' formats (no pyspark; numpy only, except ONNX which builds its
graph with the ``onnx`` package).

One module per format:

xgboost_json   GBT ensembles as XGBoost JSON models (``xgboost.Booster(model_file=...)``)
lightgbm_text  GBT ensembles as LightGBM text models (``lightgbm.Booster(model_file=...)``)
onnx_trees     GBT ensembles as ONNX TreeEnsemble graphs (``onnxruntime.InferenceSession``)
onnx_models    trees/forests (TreeEnsemble) and LinearSVC (LinearClassifier) as ONNX graphs

:func:`export_model` writes a predictor in a named format to one file, atomically.
"""
from __future__ import annotations

from ._ensemble import check_target, write_file

FORMATS = ("xgboost-json", "lightgbm-text", "onnx")


def _serializer(fmt: str, pred):
    """The writer of ``fmt`` for ``pred``'s kind, or an error naming what is supported."""
    from ..forest.predictor import ForestPredictor
    from ..gbt.predictor import TreeEnsemblePredictor
    from ..linear.predictor import LinearSVCPredictor

    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {fmt!r}")
    if isinstance(pred, TreeEnsemblePredictor):
        if fmt == "xgboost-json":
            from .xgboost_json import dumps
            return dumps
        if fmt == "lightgbm-text":
            from .lightgbm_text import dumps
            return dumps
        from .onnx_trees import dumps
        return dumps
    kinds = {ForestPredictor: "forest_to_onnx", LinearSVCPredictor: "linear_svc_to_onnx"}
    for cls, fn in kinds.items():
        if isinstance(pred, cls):
            if fmt != "onnx":
                raise ValueError(f"format {fmt!r} holds GBT models; a {cls.__name__} exports "
                                 f"as 'onnx' only")
            from . import onnx_models

            to_onnx = getattr(onnx_models, fn)
            return lambda p, **kw: to_onnx(p, **kw).SerializeToString()
    raise TypeError(f"no export for {type(pred).__name__}: GBT models (TreeEnsemblePredictor) "
                    f"export as {list(FORMATS)}, trees/forests (ForestPredictor) and "
                    f"LinearSVC (LinearSVCPredictor) as 'onnx'")


def export_bytes(pred, fmt: str, **options) -> bytes:
    """The file ``export_model`` would write, as bytes.

    Parameters
    ----------
    pred : TreeEnsemblePredictor, ForestPredictor or LinearSVCPredictor
        A model's predictor (``model.predictor``).
    fmt : {"xgboost-json", "lightgbm-text", "onnx"}
        The first two for GBT models only.
    **options
        Passed to the format's writer (``feature_names``; ``missing`` for LightGBM;
        ``dtype="float64"`` for an ONNX graph of float64 input that sums in float64).
    """
    return _serializer(fmt, pred)(pred, **options)


def export_model(pred, path: str, fmt: str, overwrite: bool = False, **options) -> None:
    """Write ``pred`` in format ``fmt`` to the file ``path`` (a local path or a URI that
    ``pyarrow.fs`` opens). The format and model are checked before anything is written;
    an existing file is replaced only with ``overwrite`` (locally through a rename, so a
    failed export keeps it)."""
    dumps = _serializer(fmt, pred)  # format and model kind first,
    check_target(path, overwrite)  # then the path, before the (possibly long) serialization
    write_file(path, dumps(pred, **options), overwrite)


__all__ = ["FORMATS", "export_bytes", "export_model"]
