"""``FieldEncoder``: categorical columns -> one-hot field vector + ``fieldStarts``.

Factorization machines and GBFM take a sparse vector whose features are grouped in fields (a
user id, an item id, an age band, genres...). ``FieldEncoder(inputCols=[...]).fit(df)`` learns
each column's categories (one job: a ``groupBy`` count of (column, category) pairs; most
frequent first, ties by value) and the model's ``transform`` adds ``outputCol``: a SparseVector with 1.0 at
each row's category of every column, columns side by side in ``inputCols`` order. The model's
``fieldStarts`` goes straight to ``GBFMRegressor(fieldStarts=...)`` (and to ``FMRegressor`` for
per-field MCMC priors). The output column also carries them in its metadata
(``{"sparkxml_fields": {"fieldStarts": [...], "numFeatures": d}}``): ``FFMRegressor`` and
``FFMClassifier`` without ``fieldStarts`` take them from there, so a Pipeline of the encoder
and an FFM needs no fieldStarts.

Column types: string, integer or boolean; ``array<...>`` of those for multi-valued columns
(1.0 at each category of the list). Unseen categories and nulls: ``handleInvalid`` "keep"
(default: the field is left empty for that row, the other fields stay), "skip" (drop the row)
or "error".
"""
from __future__ import annotations

import numpy as np
from pyspark import keyword_only
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.base import SparkXMLEstimator, SparkXMLPredictorModel
from sparkxml._core.validation import check_output_columns
from sparkxml.fm.base import add_setters
from sparkxml.fm.params import HasHandleInvalid, HasInputCols, HasOutputCol
from sparkxml_kernels.fm.fields import FIELD_KEYS, FieldVocabulary

__all__ = ["FieldEncoder", "FieldEncoderModel", "field_starts_of", "FIELDS_METADATA"]

# the key of the output column's metadata that holds the fields
FIELDS_METADATA = "sparkxml_fields"

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType)


class _FieldEncoderParams(HasInputCols, HasOutputCol, HasHandleInvalid):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(outputCol="features", handleInvalid="keep")


def _element_type(dataset, name: str):
    if name not in dataset.columns:
        raise ValueError(f"inputCols: column '{name}' is not in the DataFrame (columns: "
                         f"{dataset.columns})")
    t = dataset.schema[name].dataType
    base = t.elementType if isinstance(t, T.ArrayType) else t
    if not isinstance(base, _INTEGRAL + (T.StringType,)):
        raise TypeError(f"inputCols: column '{name}' must be string, integer or boolean (or an "
                        f"array of those), got {t.simpleString()}")
    return t, base


class FieldEncoder(SparkXMLEstimator, _FieldEncoderParams):
    """Learn the categories of ``inputCols``; see the module docstring.

    Parameters
    ----------
    inputCols : list of str
        Categorical columns, one field each, in this order.
    outputCol : str, default "features"
    handleInvalid : {"keep", "skip", "error"}, default "keep"
        At transform: what an unseen category or a null does.

    Examples
    --------
    >>> df = spark.createDataFrame([("ann", "a"), ("bob", "b"), ("ann", "b"), ("cid", "a")],
    ...                            ["user", "item"])
    >>> enc = FieldEncoder(inputCols=["user", "item"]).fit(df)
    >>> enc.fieldStarts, enc.numFeatures, enc.categories("user")   # most frequent first
    ([0, 3], 5, ['ann', 'bob', 'cid'])
    >>> enc.transform(df).first().features          # "ann" -> 0, "a" -> 3 + 0
    SparseVector(5, {0: 1.0, 3: 1.0})
    """

    _model_kind = "fields"

    @keyword_only
    def __init__(self, *, inputCols=None, outputCol="features", handleInvalid="keep"):
        super().__init__()
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, inputCols=None, outputCol="features", handleInvalid="keep"):
        return self._set_params(**self._input_kwargs)

    def _fit_validated(self, dataset):
        if not self.isDefined(self.inputCols) or not self.getOrDefault(self.inputCols):
            raise ValueError("inputCols: set the categorical columns to encode")
        cols = list(self.getInputCols())
        if len(set(cols)) != len(cols):
            raise ValueError(f"inputCols: {cols} names a column twice")
        # one job for all columns: (column index, category as a string) -> count
        parts, bases = [], []
        for k, c in enumerate(cols):
            t, base = _element_type(dataset, c)
            col = _col(c)
            if isinstance(base, T.BooleanType):  # categories as 0/1, as at transform
                col = col.cast("array<int>" if isinstance(t, T.ArrayType) else "int")
            # cast before explode: a generator nested in an expression is refused by Spark
            col = col.cast("array<string>" if isinstance(t, T.ArrayType) else "string")
            values = F.explode(col) if isinstance(t, T.ArrayType) else col
            parts.append(dataset.select(F.lit(k).alias("c"), values.alias("v")))
            bases.append(base)
        union = parts[0]
        for part in parts[1:]:
            union = union.unionByName(part)
        rows = union.where(F.col("v").isNotNull()).groupBy("c", "v").count().collect()
        vocabs = []
        for k, c in enumerate(cols):
            mine = [r for r in rows if r["c"] == k]
            if not mine:
                raise ValueError(f"inputCols: column '{c}' holds no non-null value")
            if isinstance(bases[k], T.StringType):
                vals = np.array([r["v"] for r in mine], dtype=str)
            else:
                vals = np.array([int(r["v"]) for r in mine], dtype=np.int64)
            counts = np.array([r["count"] for r in mine], np.int64)
            vocabs.append(vals[np.lexsort((vals, -counts))])  # most frequent first
        model = FieldEncoderModel._create(FieldVocabulary(vocabs, cols))
        return model


class FieldEncoderModel(SparkXMLPredictorModel, _FieldEncoderParams):
    """Fitted :class:`FieldEncoder`.

    Save format: ``path/metadata`` (``modelKind`` "fields") and ``path/data/`` (the
    arrays as parquet chunk rows, ``sparkxml_kernels.persist``) with
    ``field_starts`` int64 (m+1,), ``n_columns``, and per column c ``vocab_c`` (int64 or
    unicode categories, in field order) and ``name_c``. ``sparkxml_kernels.load_model(path)``
    returns a ``FieldVocabulary`` whose ``encode(columns)`` gives the CSR rows without Spark.
    """

    _model_kind = "fields"
    _required_arrays = FIELD_KEYS

    _predictor_class = FieldVocabulary

    @classmethod
    def _create(cls, vocab: FieldVocabulary):
        return cls(vocab)

    @property
    def _vocab(self) -> FieldVocabulary:
        return self._predictor

    @property
    def vocabulary(self) -> FieldVocabulary:
        """The JVM-free encoder (``encode(columns, handle_invalid)`` -> CSR)."""
        return self._predictor

    @property
    def fieldStarts(self) -> list:
        """Start index of each column's field (the ``fieldStarts`` param of FM and GBFM)."""
        return [int(x) for x in self._vocab.field_starts[:-1]]

    def categories(self, column: str) -> list:
        """The categories of ``column`` in field order (index i = feature fieldStart + i)."""
        if column not in self._vocab.names:
            raise ValueError(f"'{column}' is not one of inputCols {self._vocab.names}")
        return self._vocab.vocabs[self._vocab.names.index(column)].tolist()

    def _transform_validated(self, dataset):
        cols = list(self.getInputCols())
        if cols != self._vocab.names:
            raise ValueError(f"inputCols {cols} differ from the columns the encoder was fit on "
                             f"{self._vocab.names}")
        for c in cols:
            _element_type(dataset, c)
        out = self.getOutputCol()
        check_output_columns(dataset.columns, [out])
        # mapInArrow resolves every input column by its unquoted name, which fails for a name
        # with a dot: such columns cross it under a plain name and get theirs back after
        names = list(dataset.columns)
        plain = {c: f"__sparkxml_col{i}" for i, c in enumerate(names) if "." in c}
        if plain:
            dataset = dataset.select(*[_col(c).alias(plain.get(c, c)) for c in names])
        schema = T.StructType(list(dataset.schema.fields) + [T.StructField(out, VectorUDT())])
        fn = _make_encode_fn(self._vocab.to_arrays(), [plain.get(c, c) for c in cols],
                             self.getHandleInvalid(), out)
        result = dataset.mapInArrow(fn, schema)
        # the fields travel with the vectors: FFMRegressor / FFMClassifier read them when
        # their fieldStarts is unset (a Pipeline of the encoder and an FFM)
        meta = {FIELDS_METADATA: {"fieldStarts": self.fieldStarts,
                                  "numFeatures": int(self._vocab.n_features)}}
        return result.select(*[_col(plain.get(c, c)).alias(c) for c in names],
                             _col(out).alias(out, metadata=meta))


def field_starts_of(dataset, column: str):
    """The ``fieldStarts`` a ``FieldEncoderModel`` attached to its output ``column`` (list of
    int), or None when the column carries none."""
    if column not in dataset.columns:
        return None
    meta = dataset.schema[column].metadata or {}
    fs = (meta.get(FIELDS_METADATA) or {}).get("fieldStarts")
    return None if fs is None else [int(v) for v in fs]


def _col(name: str):
    """The column ``name`` quoted: 'a.b' is a column, not field b of a struct a."""
    return F.col("`" + name.replace("`", "``") + "`")


def _make_encode_fn(arrays: dict, cols, handle_invalid: str, out: str):
    def encode(batches):
        import pyarrow as pa

        from sparkxml.datasets import vector_array

        voc = FieldVocabulary.from_arrays(arrays)
        for b in batches:
            indptr, indices, data, keep = voc.encode(
                [b.column(b.schema.get_field_index(c)) for c in cols], handle_invalid)
            if not keep.all():
                b = b.filter(pa.array(keep))
            vec = vector_array(indptr, indices, data, voc.n_features)
            yield pa.RecordBatch.from_arrays(list(b.columns) + [vec],
                                             names=list(b.schema.names) + [out])

    return encode


add_setters(FieldEncoder, ("inputCols", "outputCol", "handleInvalid"))
add_setters(FieldEncoderModel, ("outputCol", "handleInvalid"))
