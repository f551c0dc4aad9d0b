"""``sparkxml gbt|lambdamart train|predict|evaluate``: boosting from the command line.

Data files are svmlight / LightGBM (``label [qid:q] idx:val ...``, 1-based indices unless
``--zero-based``) or dense delimited text with the label first (``--format tsv``, LightGBM's
``binary.train``); ``--format auto`` (the default) looks for ``:`` in the first data line.
Ranking files name their queries with ``qid:`` tokens or a LightGBM ``.query`` file
(``--query``). Only the options given are passed to the estimator: its defaults apply to the
rest (``--help`` shows them). Metrics are printed with 4 decimals, fractions (AUC, accuracy,
NDCG) in [0, 1]; rounds are counted from 1 (round 1 = the first tree).
"""
from __future__ import annotations

import time

from sparkxml.cli.common import load_saved_model, model_and_inputs_exist, model_path_free

# (flag, estimator param, type, help, default, choices): the training options. An option not
# given is not passed, so the estimator's default applies: ``default`` is it, as --help shows
# it (tests/spark/test_cli_boost.py checks these against the estimators' defaults).
_TRAIN_OPTIONS = [
    ("--max-iter", "maxIter", int, "boosting rounds (trees)", "100", None),
    ("--max-depth", "maxDepth", int, "maximum depth of a tree; 0 = unlimited, only with "
     "--grow-policy lossguide and --max-leaves > 0", "6", None),
    ("--step-size", "stepSize", float, "learning rate, in (0, 1]", "0.1", None),
    ("--max-bins", "maxBins", int, "histogram bins per feature, 2..65536", "256", None),
    ("--grow-policy", "growPolicy", str, "depthwise: split every node of a level; lossguide: "
     "split the leaf with the highest gain first", "depthwise", ["depthwise", "lossguide"]),
    ("--max-leaves", "maxLeaves", int, "maximum leaves of a tree; 0 = no limit", "0", None),
    ("--reg-lambda", "regLambda", float, "L2 regularisation of leaf weights", "1.0", None),
    ("--reg-alpha", "regAlpha", float, "L1 regularisation of leaf weights", "0.0", None),
    ("--min-split-loss", "minSplitLoss", float, "minimum loss reduction to make a split "
     "(gamma)", "0.0", None),
    ("--min-child-weight", "minChildWeight", float, "minimum sum of hessians in a child", "1.0",
     None),
    ("--subsampling-rate", "subsamplingRate", float, "fraction of rows sampled per tree, in "
     "(0, 1]", "1.0", None),
    ("--colsample-by-tree", "colsampleByTree", float, "fraction of features sampled per tree, "
     "in (0, 1]", "1.0", None),
    ("--seed", "seed", int, "random seed", "0", None),
    ("--num-workers", "numWorkers", int, "Spark tasks training runs on",
     "the session's default parallelism", None),
    ("--early-stopping-rounds", "earlyStoppingRounds", int, "stop when the --valid metric has "
     "not improved for this many rounds; 0 = off", "0", None),
]
_GBT_OPTIONS = [
    ("--eval-metric", "evalMetric", str, "metric of --valid, in the summary and for early "
     "stopping", "rmse for regression, logloss for binary, mlogloss for multiclass",
     ["rmse", "logloss", "error", "auc", "mlogloss"]),
    ("--num-classes", "numClasses", int, "number of classes, 2..10000", "max label + 1", None),
]
_RANK_OPTIONS = [
    ("--eval-metric", "evalMetric", str, "ranking metric of --valid (per query, averaged), in "
     "the summary and for early stopping: ndcg@k or map@k, k >= 1", "ndcg@10", None),
    ("--objective", "objective", str, "lambdarank: LambdaMART's NDCG lambdas; pairwise: "
     "RankNet; xendcg: LightGBM's rank_xendcg; map: XGBoost's rank:map (binary labels)",
     "lambdarank", ["lambdarank", "pairwise", "xendcg", "map"]),
    ("--ndcg-truncation", "ndcgTruncation", int, "lambdarank truncation level: a pair needs a "
     "document ranked above it; the ideal DCG normalising a query is taken at this depth",
     "30", None),
]
_VALID = "_sparkxml_is_valid"


def _format(path, fmt):
    if fmt != "auto":
        return fmt
    from sparkxml_kernels.formats import read_bytes

    for line in read_bytes(path).split(b"\n"):
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
    for flag, param, *_ in options:
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
    if s.validationHistory:  # bestIteration is 0-based: round bestIteration + 1
        print(f"validation {s.metricName}: best {s.bestScore:.4f} at round "
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
            print(f"{name} {value:.4f}")
    finally:
        scored.unpersist()


def _metrics(model, scored, clf_cls, reg_cls) -> dict:
    from pyspark.ml.evaluation import (
        BinaryClassificationEvaluator,
        MulticlassClassificationEvaluator,
        RegressionEvaluator,
    )

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


_HELP = {
    "gbt": dict(
        group="histogram gradient boosting (classification, regression)",
        train="train a GBTClassifier (or GBTRegressor, --task regression) and save it",
        data="svmlight or TSV file, label first",
        valid="validation file, same format as --data: its --eval-metric after each round "
              "goes into the summary, and early stopping watches it",
        predict="write one prediction a line (classifier: probability of class 1, or every "
                "class's probability, tab-separated; regressor: the prediction)",
        evaluate="print a saved model's metrics on --data: AUC (binary), accuracy and log "
                 "loss (classifier); RMSE, MAE and R2 (regressor)"),
    "lambdamart": dict(
        group="LambdaMART learning to rank (queries: qid: tokens or a .query file)",
        train="train a LambdaMART ranker (groupCol qid) and save it",
        data="svmlight file with qid: tokens (or --query), or TSV with --query; the label is "
             "the document's relevance (0, 1, 2, ...)",
        valid="validation queries, same format as --data: their NDCG (--eval-metric) after "
              "each round goes into the summary, and early stopping watches it",
        predict="write one ranking score a line (higher ranks first within a query)",
        evaluate="print a saved ranker's NDCG@1/3/5/10 on --data, averaged over queries"),
}


def add_parsers(algos) -> None:
    """Add the ``gbt`` and ``lambdamart`` command groups to the top-level subparsers."""
    for algo, text in _HELP.items():
        cmds = algos.add_parser(algo, help=text["group"], description=text["group"]
                                ).add_subparsers(dest="cmd", required=True)
        ranking = algo == "lambdamart"

        def data_args(sp, ranking=ranking, text=text):
            sp.add_argument("--data", required=True, help=text["data"])
            sp.add_argument("--format", default="auto", choices=["auto", "svmlight", "tsv"],
                            help="svmlight (label [qid:q] idx:val ...) or tsv (label, then "
                            "every feature); auto: svmlight when the first data line has ':'")
            sp.add_argument("--zero-based", action="store_true",
                            help="svmlight feature indices start at 0 (else at 1)")
            if ranking:
                sp.add_argument("--query", default=None, help="LightGBM .query file of "
                                "--data: one query size a line (without qid: tokens)")

        t = cmds.add_parser("train", help=text["train"], description=text["train"])
        data_args(t)
        t.add_argument("--model", required=True, help="directory to save the model to")
        t.add_argument("--overwrite", action="store_true",
                       help="replace --model if it exists (checked before training)")
        t.add_argument("--valid", default=None, help=text["valid"])
        if ranking:
            t.add_argument("--valid-query", default=None, help="LightGBM .query file of "
                           "--valid")
        else:
            t.add_argument("--task", default="classification",
                           choices=["classification", "regression"],
                           help="classification: GBTClassifier (labels 0..K-1); regression: "
                           "GBTRegressor")
        for flag, param, typ, help_, default, choices in (
                _TRAIN_OPTIONS + (_RANK_OPTIONS if ranking else _GBT_OPTIONS)):
            t.add_argument(flag, type=typ, default=None, choices=choices,
                           help=f"{help_}; estimator param {param} (default: {default})")
        t.set_defaults(fn=cmd_train, check=model_path_free)
        p = cmds.add_parser("predict", help=text["predict"], description=text["predict"])
        data_args(p)
        p.add_argument("--model", required=True, help="saved model directory")
        p.add_argument("--output", required=True, help="file to write")
        p.set_defaults(fn=cmd_predict, check=model_and_inputs_exist)
        e = cmds.add_parser("evaluate", help=text["evaluate"], description=text["evaluate"])
        data_args(e)
        e.add_argument("--model", required=True, help="saved model directory")
        e.set_defaults(fn=cmd_evaluate, check=model_and_inputs_exist)


__all__ = ["add_parsers"]
