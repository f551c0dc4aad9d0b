"""Implicit feedback: ``FMRanker``, a factorization machine ranker trained with the BPR loss.

Each row of the training DataFrame is one observed interaction (user, item, optional context
vector). The score is the factorization machine over [one-hot user, one-hot item, context]
(``sparkxml_kernels.fm.ranker``), trained on the BPR pairwise loss
−log σ(s(u, i⁺, x) − s(u, i⁻, x)) with ``numNegatives`` negatives a row and epoch, drawn
uniformly from the item catalogue (the user's own positives rejected) by a hash of (seed,
epoch, row): see ``sparkxml_kernels.fm.bpr``.

A fit runs a checks job (row count, null user / item ids, the sorted id catalogues; for
``featuresCol``, the FM checks job) and ONE barrier stage. Rows are dealt to 16 row blocks by
a hash of their USER (so that a task holds all positives of its users, which negative
sampling rejects), ordered by a content key, and every gradient sum is taken per block and the
blocks' sums added in block order: the same seed gives the same model, bit for bit, for any
numWorkers up to 16 and any input partitioning. Each step is synchronous (every task applies
the same AdamW step to the same parameters).
"""
from __future__ import annotations

import time

from pyspark import keyword_only
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml._core.barrier import run_barrier_training
from sparkxml._core.base import SparkXMLEstimator, SparkXMLPredictorModel
from sparkxml._core.params import (
    HasTol,
    HasVerbose,
)
from sparkxml._core.progress import FitProgress
from sparkxml._core.validation import check_column, check_output_columns, check_vector_column
from sparkxml._core.workers import requested_workers, workers_for
from sparkxml.fm.base import (
    FMTrainingSummary,
    _block_partitions,
    add_setters,
    cap_workers,
    data_checks,
)
from sparkxml.fm.params import (
    FACTOR_PARAMS,
    FactorParams,
    HasColdStartStrategy,
    HasItemCol,
    HasMiniBatchFraction,
    HasNumNegatives,
    HasUserCol,
)
from sparkxml.fm.ranker_tasks import (
    RANKER_KIND,
    USER_KEY,
    make_ranker_load_fn,
    make_ranker_train_fn,
    make_recommend_fn,
    make_score_fn,
)
from sparkxml.fm.tasks import KEY
from sparkxml_kernels.fm.ranker import RANKER_KEYS, FMRankerPredictor

__all__ = ["FMRanker", "FMRankerModel"]

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_PARAMS = FACTOR_PARAMS + ("userCol", "itemCol", "miniBatchFraction", "numNegatives", "tol",
                           "coldStartStrategy")


class _FMRankerParams(HasUserCol, HasItemCol, FactorParams, HasMiniBatchFraction,
                      HasNumNegatives, HasTol, HasColdStartStrategy):
    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(userCol="user", itemCol="item", factorSize=10, maxIter=30,
                         regParam=1e-4, stepSize=0.01, miniBatchFraction=0.05, numNegatives=1,
                         initStd=0.1, tol=0.0, coldStartStrategy="nan")

    def _context_col(self):
        """featuresCol, or None: the context vector is optional (no default)."""
        return self.getFeaturesCol() if self.isSet(self.featuresCol) else None


def _check_ids(dataset, ucol: str, icol: str) -> None:
    check_column(dataset, ucol, "userCol", _INTEGRAL, "an integer user id")
    check_column(dataset, icol, "itemCol", _INTEGRAL, "an integer item id")


class FMRanker(SparkXMLEstimator, _FMRankerParams, HasVerbose):
    """Factorization machine ranker for implicit feedback (BPR loss; see the module docstring).

    Parameters
    ----------
    userCol, itemCol : str, default "user", "item"
        Integer ids (byte to long); every row needs both (a null is an error). Each row is one
        positive interaction; filter the data first (e.g. ratings >= 4) and pass positives
        only.
    featuresCol : str, optional
        Context vector of the interaction (Spark ML vector, finite values, all one size): the
        FM's further one-hot or numeric inputs. Unset: user and item only.
    predictionCol : str, default "prediction"
        The model's transform puts the score s(u, i, x) there (double), as ALS does.
    factorSize : int, default 10
        Rank k of the factors.
    maxIter : int, default 30
        Epochs (each row is seen once an epoch, with fresh negatives).
    regParam : float, default 1e-4
        AdamW's decoupled weight decay, on every parameter.
    stepSize : float, default 0.01
        AdamW learning rate.
    miniBatchFraction : float, default 0.05
        Fraction of the rows in a mini-batch, in (0, 1]: a step per mini-batch.
    numNegatives : int, default 1
        Negative items a row and epoch.
    initStd : float, default 0.1
        Standard deviation of the initial factors (item biases start at 0).
    seed : int, default 0
    tol : float, default 0.0
        Stop when the mean BPR loss changed by less than this fraction over an epoch (0: run
        maxIter epochs).
    numWorkers : int, optional
        Barrier tasks (at most 16: the row blocks); default the session's parallelism, capped
        at one worker per 50,000 rows.
    timeoutSeconds : float, default 600
    verbose : int, default 0
        Log one line every ``verbose`` epochs with the mean loss; 0 = silent.
    coldStartStrategy : {"nan", "drop"}, default "nan"
        For the model's transform: rows with a user or item not seen in training score NaN or
        are dropped, as ALS.

    Cost: a step adds, per row block, a gradient of items + (users + items + context
    features) x factorSize numbers, so one step costs 16 such arrays whatever the batch;
    keep ``miniBatchFraction`` large enough that batches hold many rows.

    Differences from MLlib's ALS (implicitPrefs=True)
    -------------------------------------------------
    ALS fits a weighted squared loss on every (user, item) cell with confidence
    1 + alpha r; FMRanker optimises the pairwise ranking of positives over sampled negatives
    (BPR) and takes context features. Ids may be any integers (ALS: int range). Like ALS,
    ``recommendForAllUsers`` excludes nothing, not even the training positives.

    Examples
    --------
    >>> rows = [(u, i) for u in range(12) for i in range(8) if (u + i) % 3 == 0]
    >>> df = spark.createDataFrame(rows, "user int, item int")
    >>> model = FMRanker(factorSize=4, maxIter=40, stepSize=0.05, miniBatchFraction=0.5,
    ...                  seed=1).fit(df)
    >>> model.transform(df).columns
    ['user', 'item', 'prediction']
    >>> recs = model.recommendForAllUsers(3)
    >>> recs.columns, recs.count()
    (['user', 'recommendations'], 12)
    >>> top = recs.where("user = 0").first().recommendations
    >>> {r.item % 3 for r in top}                     # user 0's positives: items 0, 3, 6
    {0}
    """

    _model_kind = RANKER_KIND

    @keyword_only
    def __init__(self, *, userCol="user", itemCol="item", featuresCol=None,
                 predictionCol="prediction", factorSize=10, maxIter=30, regParam=1e-4,
                 stepSize=0.01, miniBatchFraction=0.05, numNegatives=1, initStd=0.1, seed=0,
                 tol=0.0, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                 coldStartStrategy="nan"):
        super().__init__()
        self._setDefault(verbose=0)
        self._set_params(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, userCol="user", itemCol="item", featuresCol=None,
                  predictionCol="prediction", factorSize=10, maxIter=30, regParam=1e-4,
                  stepSize=0.01, miniBatchFraction=0.05, numNegatives=1, initStd=0.1, seed=0,
                  tol=0.0, numWorkers=None, timeoutSeconds=600.0, verbose=0,
                  coldStartStrategy="nan"):
        return self._set_params(**self._input_kwargs)

    def _catalogues(self, dataset, ucol: str, icol: str):
        """The checks job: row count, null ids, and the sorted user and item ids."""
        row = dataset.agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.col(ucol).isNull().cast("long")).alias("u_null"),
            F.sum(F.col(icol).isNull().cast("long")).alias("i_null"),
            F.array_sort(F.collect_set(F.col(ucol).cast("long"))).alias("users"),
            F.array_sort(F.collect_set(F.col(icol).cast("long"))).alias("items")).first()
        if not row["n"]:
            raise ValueError("the training DataFrame is empty")
        for param, col, key in (("userCol", ucol, "u_null"), ("itemCol", icol, "i_null")):
            if row[key]:
                raise ValueError(f"{param}: column '{col}' has {row[key]} null value(s); every "
                                 f"BPR row needs a user and an item")
        if len(row["items"]) < 2:
            raise ValueError(f"itemCol: column '{icol}' holds a single item "
                             f"({row['items'][0]}); BPR ranks a positive above a sampled "
                             f"other item and needs at least 2 items")
        return int(row["n"]), list(row["users"]), list(row["items"])

    def _fit_validated(self, dataset):
        import numpy as np

        spark = dataset.sparkSession
        ucol, icol, fcol = self.getUserCol(), self.getItemCol(), self._context_col()
        _check_ids(dataset, ucol, icol)
        if fcol is not None:
            check_vector_column(dataset, fcol)
        for name in (KEY, USER_KEY):
            if name in dataset.columns:
                raise ValueError(f"column name '{name}' is reserved")
        n_workers = requested_workers(spark, self)
        with FitProgress(spark, self, self.getVerbose()) as progress:
            t0 = time.perf_counter()
            with progress.phase("checks"):
                n, users, items = self._catalogues(dataset, ucol, icol)
                d = 0
                if fcol is not None:
                    d = data_checks(dataset.withColumn("__sparkxml_one", F.lit(1.0)), fcol,
                                    "__sparkxml_one", None, None, False)["d"]
            n_workers = cap_workers("FMRanker", workers_for(
                spark, {"n_train": n, "weight_train": float(n)}, None, n_workers))
            params = {"factorSize": self.getFactorSize(), "maxIter": self.getMaxIter(),
                      "regParam": self.getRegParam(), "stepSize": self.getStepSize(),
                      "miniBatchFraction": self.getMiniBatchFraction(),
                      "numNegatives": self.getNumNegatives(), "initStd": self.getInitStd(),
                      "seed": int(self.getSeed()), "tol": self.getTol()}
            checks_seconds = time.perf_counter() - t0
            key_cols = [F.col(ucol), F.col(icol)] + ([F.col(fcol)] if fcol else [])
            cols = [F.col(ucol).cast("long").alias("u"), F.col(icol).cast("long").alias("i")]
            if fcol:
                cols.append(F.col(fcol).alias("f"))
            cols += [F.xxhash64(*key_cols).alias(KEY), F.xxhash64(F.col(ucol).cast("long"))
                     .alias(USER_KEY)]
            df = _block_partitions(dataset.select(*cols), int(n_workers), block_key=USER_KEY)
            with progress.phase("train"):
                result = run_barrier_training(
                    df, n_workers, make_ranker_load_fn(users, items, fcol, d),
                    make_ranker_train_fn(params, len(users), len(items), d,
                                         progress=progress.task_spec()),
                    timeout_s=self.getTimeoutSeconds(), repartition=False)
            summary = FMTrainingSummary._from_fit(result, checks_seconds)
            if progress.verbose > 0 and not progress.live_lines:
                progress.log_rounds(summary._rows(), int(params["maxIter"]), unit="epoch")
        arrays = dict(result.arrays, user_ids=np.asarray(users, np.int64),
                      item_ids=np.asarray(items, np.int64), n_features=np.asarray(d, np.int64))
        return FMRankerModel(FMRankerPredictor.from_arrays(arrays), summary)


class FMRankerModel(SparkXMLPredictorModel, _FMRankerParams):
    """Fitted :class:`FMRanker`.

    ``transform`` adds ``predictionCol``: the score s(user, item, context) of each row (NaN,
    or the row dropped with ``coldStartStrategy="drop"``, for an unseen user or item).
    ``recommendForAllUsers(k)`` / ``recommendForUserSubset(df, k)`` return ALS's shape:
    (userCol long, recommendations array<struct<itemCol long, rating float>>), best first,
    scored without context.

    Save format: ``path/metadata`` (``modelKind`` "fm_ranker") and ``path/data/`` with the
    arrays of ``sparkxml_kernels.fm.ranker`` (user_ids, item_ids, item_bias, user_factors,
    item_factors, feature_factors, n_features) plus ``summary.*``.
    ``sparkxml_kernels.load_model(path)`` serves it without Spark: ``predict(users, items,
    X=None)`` and ``recommend(users, k)``.
    """

    _model_kind = RANKER_KIND
    _predictor_class = FMRankerPredictor
    _required_arrays = RANKER_KEYS
    _summary_class = FMTrainingSummary

    @property
    def rank(self) -> int:
        """factorSize of the fitted factors (ALS's name)."""
        return int(self._predictor.factor_size)

    @property
    def userIds(self) -> list:
        """The user ids seen in training, ascending."""
        return self._predictor.user_ids.tolist()

    @property
    def itemIds(self) -> list:
        """The item catalogue, ascending."""
        return self._predictor.item_ids.tolist()

    def _check_model(self):
        if self._predictor is None:
            raise RuntimeError("this model has no parameters (was it constructed directly?)")

    def _transform_validated(self, dataset):
        self._check_model()
        ucol, icol, fcol = self.getUserCol(), self.getItemCol(), self._context_col()
        _check_ids(dataset, ucol, icol)
        if self._predictor.n_features and fcol is None:
            raise ValueError(f"featuresCol: the model was trained with a context vector of "
                             f"{self._predictor.n_features} features; set featuresCol")
        if fcol is not None:
            check_vector_column(dataset, fcol)
        out = self.getPredictionCol()
        check_output_columns(dataset.columns, [out])
        schema = T.StructType(list(dataset.schema.fields)
                              + [T.StructField(out, T.DoubleType())])
        fn = make_score_fn(self._task_model(dataset), ucol, icol,
                           fcol if self._predictor.n_features else None,
                           self._predictor.n_features, out,
                           self.getColdStartStrategy() == "drop")
        return dataset.mapInArrow(fn, schema)

    def _recommend(self, users_df, k: int, by_index: bool):
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"numItems={k!r} must be an integer >= 1")
        ucol, icol = self.getUserCol(), self.getItemCol()
        schema = T.StructType([
            T.StructField(ucol, T.LongType()),
            T.StructField("recommendations", T.ArrayType(T.StructType([
                T.StructField(icol, T.LongType()), T.StructField("rating", T.FloatType())])))])
        fn = make_recommend_fn(self._task_model(users_df), int(k), ucol, icol, by_index)
        return users_df.mapInArrow(fn, schema)

    def recommendForAllUsers(self, numItems: int):
        """DataFrame (userCol, recommendations: array<struct<itemCol, rating>>): the
        ``numItems`` best items of every user seen in training, best first (ties: lower item
        id), scored without context and excluding nothing (as ALS)."""
        from sparkxml._core.storage import active_session

        self._check_model()
        spark = active_session()
        if spark is None:
            raise RuntimeError("recommendForAllUsers needs an active SparkSession")
        users = spark.range(len(self._predictor.user_ids)).select(F.col("id").alias("u"))
        return self._recommend(users, numItems, by_index=True)

    def recommendForUserSubset(self, dataset, numItems: int):
        """As :meth:`recommendForAllUsers` for the distinct users of ``dataset``'s userCol
        (users not seen in training are left out, as ALS)."""
        self._check_model()
        ucol = self.getUserCol()
        check_column(dataset, ucol, "userCol", _INTEGRAL, "an integer user id")
        users = (dataset.select(F.col(ucol).cast("long").alias("u")).where("u IS NOT NULL")
                 .distinct())
        return self._recommend(users, numItems, by_index=False)


add_setters(FMRanker, _PARAMS)
add_setters(FMRankerModel, ("userCol", "itemCol", "featuresCol", "predictionCol",
                            "coldStartStrategy"))
