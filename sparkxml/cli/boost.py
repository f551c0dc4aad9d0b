"""``sparkxml gbt|lambdamart train|predict|evaluate``: boosting from the command line.

Data files are svmlight / LightGBM (``label [qid:q] idx:val ...``, 1-based indices unless
``--zero-based``) or dense delimited text with the label first (``--format tsv``, LightGBM's
``binary.train``); ``--format auto`` (the default) looks for ``:`` in the first data line.
Ranking files name their queries with ``qid:`` tokens or a LightGBM ``.query`` file
(``--query``). Only the options given are passed to the estimator: its defaults apply to the
rest.
"""
from __future__ import annotations

import time

from sparkxml.cli.common import load_saved_model, model_path_free

# (flag, estimator param, type): training options shared by gbt and lambdamart
_TRAIN_OPTIONS = [
    ("--max-iter", "maxIter", int), ("--max-depth", "maxDepth", int),
    ("--step-size", "stepSize", float), ("--max-bins", "maxBins", int),
    ("--grow-policy", "growPolicy", str), ("--max-leaves", "maxLeaves", int),
    ("--reg-lambda", "regLambda", float), ("--reg-alpha", "regAlpha", float),
    ("--min-split-loss", "minSplitLoss", float), ("--min-child-weight", "minChildWeight", float),
    ("--subsampling-rate", "subsamplingRate", float),
    ("--colsample-by-tree", "colsampleByTree", float), ("--seed", "seed", int),
    ("--num-workers", "numWorkers", int), ("--early-stopping-rounds", "earlyStoppingRounds", int),
    ("--eval-metric", "evalMetric", str),
]
_GBT_OPTIONS = [("--num-classes", "numClasses", int)]
_RANK_OPTIONS = [("--objective", "objective", str), ("--ndcg-truncation", "ndcgTruncation", int)]
_VALID = "_sparkxml_is_valid"


def _format(path, fmt):
    if fmt != "auto":
        return fmt
    from sparkxml_kernels.formats import _read_bytes

    for line in _read_bytes(path).split(b"\n"):
        if line.strip() and not line.lstrip().startswith(b"#"):
            return "svmlight" if b":" in line else "tsv"
    return "svmlight"


def _read(spark, args, path, query=None, num_features=None):
    from sparkxml import datasets

    if _format(path, args.format) == "tsv":
        return datasets.read_tsv(spark, path, query_path=query, num_features=num_features)
    return datasets.read_svmlight(spark, path, query_path=query, num_features=num_features,
                                  zero_based=args.zero_based)


def _training_frame(spark, args, ranking: bool):
    from pyspark.sql import functions as F

    from sparkxml.datasets import num_features

    train = _read(spark, args, args.data, args.query if ranking else None)
    if not args.valid:
        return train, False
    valid = _read(spark, args, args.valid, args.valid_query if ranking else None,
                  num_features=num_features(train))
    if ranking and "qid" in valid.columns and "qid" in train.columns:
        # query ids number each file's queries from 0: keep the two files' queries apart
        top = train.agg(F.max("qid")).first()[0]
        valid = valid.withColumn("qid", F.col("qid") + F.lit(int(top) + 1))
    train = train.withColumn(_VALID, F.lit(False))
    valid = valid.withColumn(_VALID, F.lit(True))
    return train.unionByName(valid), True


def _params(args, options) -> dict:
    out = {}
    for flag, param, _ in options:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            out[param] = value
    return out


def cmd_train(spark, args):
    ranking = args.algo == "lambdamart"
    df, has_valid = _training_frame(spark, args, ranking)
    params = _params(args, _TRAIN_OPTIONS + (_RANK_OPTIONS if ranking else _GBT_OPTIONS))
    if has_valid:
        params["validationIndicatorCol"] = _VALID
    if ranking:
        from sparkxml.gbt.lambdamart import LambdaMART

        if "qid" not in df.columns:
            raise ValueError(f"{args.data} names no queries: give qid: tokens or --query")
        est = LambdaMART(groupCol="qid", **params)
    elif args.task == "regression":
        from sparkxml.gbt.estimators import GBTRegressor

        est = GBTRegressor(**params)
    else:
        from sparkxml.gbt.estimators import GBTClassifier

        est = GBTClassifier(**params)
    t = time.perf_counter()
    model = est.fit(df)
    print(f"trained {model.getNumTrees} trees in {time.perf_counter() - t:.1f} s")
    s = model.summary
    if s.validationHistory:
        print(f"validation {s.metricName}: best {s.bestScore:.6g} at round "
              f"{s.bestIteration + 1} of {s.roundsRun}")
    w = model.write()
    (w.overwrite() if args.overwrite else w).save(args.model)
    print(f"model saved to {args.model}")


def _model_classes(algo):
    if algo == "lambdamart":
        from sparkxml.gbt.lambdamart import LambdaMARTModel

        return (LambdaMARTModel,)
    from sparkxml.gbt.estimators import GBTClassificationModel, GBTRegressionModel

    return (GBTClassificationModel, GBTRegressionModel)


def _scored(spark, args):
    model = load_saved_model(args.model, _model_classes(args.algo))
    query = getattr(args, "query", None)
    df = _read(spark, args, args.data, query, num_features=model.numFeatures)
    return model, model.transform(df)


def cmd_predict(spark, args):
    from sparkxml._core.compat import to_arrow
    from sparkxml.gbt.estimators import GBTClassificationModel

    model, scored = _scored(spark, args)
    if isinstance(model, GBTClassificationModel):
        # binary: P(class 1) a line, as LightGBM writes; multiclass: all class probabilities
        from pyspark.ml.functions import vector_to_array

        col = to_arrow(scored.select(vector_to_array(model.getProbabilityCol()).alias("p")))
        probs = col.column(0).to_pylist()
        lines = [f"{p[1]:.9g}" if len(p) == 2 else "\t".join(f"{v:.9g}" for v in p)
                 for p in probs]
    else:
        col = to_arrow(scored.select(model.getPredictionCol())).column(0)
        lines = [f"{v:.9g}" for v in col.to_pylist()]
    with open(args.output, "w") as out:
        out.write("\n".join(lines) + ("\n" if lines else ""))
    print(f"wrote {len(lines)} predictions to {args.output}")


def cmd_evaluate(spark, args):
    from sparkxml.gbt.estimators import GBTClassificationModel, GBTRegressionModel

    model, scored = _scored(spark, args)
    scored = scored.cache()
    try:
        for name, value in _metrics(model, scored, GBTClassificationModel,
                                    GBTRegressionModel).items():
            print(f"{name} = {value:.6f}")
    finally:
        scored.unpersist()


def _metrics(model, scored, clf_cls, reg_cls) -> dict:
    from pyspark.ml.evaluation import (BinaryClassificationEvaluator,
                                       MulticlassClassificationEvaluator, RegressionEvaluator)

    if isinstance(model, clf_cls):
        out = {}
        if model.numClasses == 2:
            out["auc"] = BinaryClassificationEvaluator(
                rawPredictionCol=model.getRawPredictionCol()).evaluate(scored)
        for m in ("accuracy", "logLoss"):
            out[m] = MulticlassClassificationEvaluator(
                metricName=m, predictionCol=model.getPredictionCol(),
                probabilityCol=model.getProbabilityCol()).evaluate(scored)
        return out
    if isinstance(model, reg_cls):
        return {m: RegressionEvaluator(metricName=m, predictionCol=model.getPredictionCol())
                .evaluate(scored) for m in ("rmse", "mae", "r2")}
    from sparkxml.evaluation import RankingEvaluator

    if "qid" not in scored.columns:
        raise ValueError("ranking evaluation needs queries: give qid: tokens or --query")
    return {f"ndcg@{k}": RankingEvaluator(metricName="ndcgAtK", k=k, groupCol="qid",
                                          predictionCol=model.getPredictionCol())
            .evaluate(scored) for k in (1, 3, 5, 10)}


def add_parsers(algos) -> None:
    """Add the ``gbt`` and ``lambdamart`` command groups to the top-level subparsers."""
    for algo, what in (("gbt", "histogram gradient boosting (classification, regression)"),
                       ("lambdamart", "LambdaMART learning to rank")):
        cmds = algos.add_parser(algo, help=what).add_subparsers(dest="cmd", required=True)
        ranking = algo == "lambdamart"

        def data_args(sp, ranking=ranking):
            sp.add_argument("--data", required=True, help="svmlight or TSV file")
            sp.add_argument("--format", default="auto", choices=["auto", "svmlight", "tsv"])
            sp.add_argument("--zero-based", action="store_true",
                            help="svmlight feature indices start at 0 (default 1)")
            if ranking:
                sp.add_argument("--query", default=None, help="LightGBM .query file")

        t = cmds.add_parser("train", help="train and save a model")
        data_args(t)
        t.add_argument("--model", required=True, help="directory to save the model to")
        t.add_argument("--overwrite", action="store_true")
        t.add_argument("--valid", default=None, help="validation file (early stopping, "
                       "summary history)")
        if ranking:
            t.add_argument("--valid-query", default=None, help=".query file of --valid")
        else:
            t.add_argument("--task", default="classification",
                           choices=["classification", "regression"])
        for flag, param, typ in _TRAIN_OPTIONS + (_RANK_OPTIONS if ranking else _GBT_OPTIONS):
            t.add_argument(flag, type=typ, default=None, help=f"estimator param {param}")
        t.set_defaults(fn=cmd_train, check=model_path_free)
        p = cmds.add_parser("predict", help="write one prediction a line (classifier: "
                            "probability of class 1, or every class's probability)")
        data_args(p)
        p.add_argument("--model", required=True)
        p.add_argument("--output", required=True)
        p.set_defaults(fn=cmd_predict)
        e = cmds.add_parser("evaluate", help="print AUC/accuracy/logloss, RMSE/MAE/R2, or "
                            "NDCG@1/3/5/10 of a saved model")
        data_args(e)
        e.add_argument("--model", required=True)
        e.set_defaults(fn=cmd_evaluate)


__all__ = ["add_parsers"]
