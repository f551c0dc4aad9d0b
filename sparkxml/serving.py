"""Score a saved model in any Spark job: :func:`predict_udf`."""


def predict_udf(path: str):
    """A pandas UDF giving the prediction of the model saved at ``path``.

    Each Python worker reads the model once and memory-maps its arrays from one decoded copy
    per node (``sparkxml_kernels.model_cache``, as ``transform`` does); the values are those of
    ``sparkxml_kernels.load_model(path).predict``, which equal the model's ``transform``.

    Parameters
    ----------
    path : str
        A saved sparkxml model directory that the executors' Python can open (a local path
        with a local master, a ``/dbfs`` or ``/Volumes`` path, ``hdfs://``, ``s3://``, ...).

    Returns
    -------
    callable
        Called on the training feature columns (the model's ``feature_columns``, by name,
        as names or Columns), or on one array column of the feature vectors
        (``vector_to_array(featuresCol)``: a Spark ML vector column cannot enter a pandas
        UDF), it returns the Column of the predictions: double, or for FastXML /
        PfastreXML array<int> (the ``topK`` labels of each row).

    Raises
    ------
    ModelFormatError
        ``path`` is not a sparkxml model directory (checked on the driver, at once).
    ValueError
        A FieldEncoderModel (an encoder, not a predictor).

    Examples
    --------
    >>> from pyspark.ml.functions import vector_to_array           # doctest: +SKIP
    >>> score = predict_udf("/dbfs/models/gbt")                      # doctest: +SKIP
    >>> df.withColumn("p", score(vector_to_array("features")))       # doctest: +SKIP
    """
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.functions import pandas_udf

    import sparkxml_kernels
    from sparkxml_kernels import persist
    from sparkxml_kernels.model_cache import ModelHandle
    from sparkxml_kernels.serving import kernel_from_arrays, serve

    served = sparkxml_kernels.load_model(path)  # checks the directory, on the driver
    if not hasattr(served, "predict"):
        raise ValueError(f"{path} holds a {type(served).__name__}, not a predictor")
    meta = persist.load_metadata(path)
    kind = meta["modelKind"]
    source = persist.pyarrow_path(path)
    handle = ModelHandle(source=source, save_id=meta["saveId"]) if meta.get("saveId") else \
        ModelHandle(inline=persist.load_arrays(path))
    names = served.feature_columns
    vector_col = served.spec.vector_col or "features"
    xml = hasattr(served, "predict_topk")

    def build(arrays):
        return serve(kind, kernel_from_arrays(kind, arrays, meta), meta)

    rtype = "array<int>" if xml else "double"

    def run(X):
        return pd.Series(handle.build(("served", kind), build).predict(X))

    @pandas_udf(rtype)
    def on_columns(frame: pd.DataFrame) -> pd.Series:  # a struct arrives as a DataFrame
        return run(frame)

    @pandas_udf(rtype)
    def on_vectors(vectors: pd.Series) -> pd.Series:
        return run(pd.DataFrame({vector_col: vectors}))

    def predict(*cols):
        if names is not None and len(cols) == len(names):
            return on_columns(F.struct(*cols))
        if len(cols) == 1:
            return on_vectors(cols[0])
        raise ValueError(f"predict_udf({path!r}) takes the columns {names} or one array "
                         f"column of the feature vectors, got {len(cols)} columns")

    return predict


__all__ = ["predict_udf"]
