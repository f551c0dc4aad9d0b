"""LambdaMART learning to rank end to end with the DataFrame API.

Runs unchanged with plain Python (local Spark) or on a cluster:

    python examples/lambdamart_example.py [--data rank.train --test rank.test]
    spark-submit examples/lambdamart_example.py [--data ... --test ...]

Without --data it trains on generated queries. --data/--test take svmlight / LightGBM ranking
files (``rel qid:q idx:val ...``, or without ``qid:`` next to a LightGBM ``<file>.query``
group-size file), e.g. LightGBM's examples/lambdarank/rank.train and rank.test. Rounds are
counted from 1 (``summary.bestIteration`` is a 0-based index: the best round is
``bestIteration + 1``); the pipeline goes to a temporary directory removed at the end.
"""
import argparse
import os
import tempfile

import numpy as np
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

import sparkxml_kernels
from sparkxml import LambdaMART, RankingEvaluator
from sparkxml.datasets import read_svmlight
from sparkxml.session import get_session


def make_queries(spark, n_queries=400, n_features=20, seed=0):
    """Queries of 5-30 documents; relevance 0-4 from a hidden noisy score of the features."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=n_features) * (rng.random(n_features) < 0.5)
    rows = []
    for q in range(n_queries):
        centre = rng.normal(size=n_features) * 0.5          # query-specific shift
        for _ in range(rng.integers(5, 31)):
            x = centre + rng.normal(size=n_features)
            s = x @ w + 0.5 * np.sin(3 * x[0]) + 0.5 * rng.normal()
            rows.append((f"query-{q}", float(np.clip(np.round(s / 2 + 1), 0, 4)),
                         Vectors.dense(x.tolist())))
    schema = T.StructType([T.StructField("qid", T.StringType()),
                           T.StructField("label", T.DoubleType()),
                           T.StructField("features", VectorUDT())])
    df = spark.createDataFrame(rows, schema)
    n_train = int(0.8 * n_queries)
    is_train = F.regexp_extract("qid", r"(\d+)", 1).cast("int") < n_train
    return df.where(is_train), df.where(~is_train)


def _query_file(path):
    return path + ".query" if os.path.exists(path + ".query") else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--test")
    ap.add_argument("--max-iter", type=int, default=100)
    args = ap.parse_args()

    spark = get_session(app_name="lambdamart-example")  # spark-submit's session, or local[*]
    if args.data:
        train = read_svmlight(spark, args.data, _query_file(args.data))
        test_path = args.test or args.data
        test = read_svmlight(spark, test_path, _query_file(test_path),
                             num_features=len(train.first()["features"]))
    else:
        train, test = make_queries(spark)
    # hold out one query in five for early stopping (whole queries)
    train = train.withColumn("valid", F.abs(F.hash("qid")) % 5 == 0).cache()
    test = test.cache()

    ranker = LambdaMART(groupCol="qid", labelCol="label", maxIter=args.max_iter,
                        stepSize=0.1, maxDepth=6, validationIndicatorCol="valid",
                        earlyStoppingRounds=20, evalMetric="ndcg@10")
    model = Pipeline(stages=[ranker]).fit(train)
    lm = model.stages[0]
    s = lm.summary
    print(f"rounds kept {s.numRounds} of {s.roundsRun}; best validation {s.metricName} "
          f"{s.bestScore:.4f} at round {s.bestIteration + 1}")

    pred = model.transform(test).cache()
    pred.orderBy("qid", F.desc("prediction")).select("qid", "label", "prediction").show(8)
    for metric, name in (("ndcgAtK", "NDCG"), ("mapAtK", "MAP"), ("precisionAtK", "P")):
        for k in (1, 5, 10):
            ev = RankingEvaluator(metricName=metric, k=k, groupCol="qid")
            print(f"{name}@{k} {ev.evaluate(pred):.4f}")

    with tempfile.TemporaryDirectory(prefix="sparkxml-example-") as tmp:
        path = os.path.join(tmp, "pipeline")
        model.write().save(path)
        reloaded = PipelineModel.load(path)
        same = reloaded.transform(test).select("prediction").collect() == \
            pred.select("prediction").collect()
        print(f"saved, reloaded (temporary directory, removed): scores the same: {same}")
        # serving without Spark: the model's directory inside the pipeline
        stages = os.path.join(path, "stages")
        scorer = sparkxml_kernels.load_model(os.path.join(stages, sorted(os.listdir(stages))[0]))
    first = test.limit(3).collect()
    X = np.array([r["features"].toArray() for r in first])
    print("scores without Spark:", np.round(scorer.predict(X), 4).tolist())


if __name__ == "__main__":
    main()
