"""``saveNativeModel`` for the models whose only native format is ONNX (trees, forests,
LinearSVC); the GBT models define their own (XGBoost JSON and LightGBM text as well)."""
from __future__ import annotations


class NativeExportMixin:
    """Adds ``saveNativeModel(path, format="onnx")`` to a ``SparkXMLPredictorModel``."""

    def saveNativeModel(self, path: str, format: str = "onnx",  # noqa: A002
                        overwrite: bool = False) -> None:
        """Write the model as an ONNX graph (one file) that ONNX Runtime runs (SynapseML's
        name; ``pip install "sparkxml[onnx]"``).

        Parameters
        ----------
        path : str
            The file to write (a local path or a URI ``pyarrow.fs`` opens).
        format : {"onnx"}
            Trees and forests: ``ai.onnx.ml`` TreeEnsembleRegressor / TreeEnsembleClassifier
            (outputs ``variable``, or ``label`` and ``probabilities``); LinearSVC:
            LinearClassifier (outputs ``label`` and ``scores`` = ``rawPrediction``). Input
            ``features``, float32; outputs agree with ``transform`` to float32 rounding.
            See ``sparkxml_kernels.export.onnx_models``.
        overwrite : bool
            Replace an existing file (otherwise a FileExistsError).
        """
        from sparkxml_kernels.export import export_model

        pred = self.predictor  # type: ignore[attr-defined]
        if pred is None:
            raise RuntimeError(f"this {type(self).__name__} holds no predictor (was it "
                               f"constructed directly?)")
        export_model(pred, path, format, overwrite=overwrite)
