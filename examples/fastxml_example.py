"""FastXML (or PfastreXML, with --pfastrexml) end to end with the DataFrame API.

Runs unchanged with plain Python (local Spark) or on a cluster:

    python examples/fastxml_example.py [--data train.txt --test test.txt] [--pfastrexml]
    spark-submit examples/fastxml_example.py [--data hdfs-visible train.txt --test test.txt]

Without --data it trains on generated data. --data/--test take Extreme Classification
Repository text files (header `N D L`, then `l1,l2 f:v ...`). Metrics are fractions in
[0, 1], as XMLEvaluator returns them. The pipeline is saved to a temporary directory and
reloaded; the directory is removed at the end.
"""
import argparse
import os
import tempfile

from pyspark.ml import Pipeline, PipelineModel

from sparkxml import FastXML, PfastreXML, XMLEvaluator, label_propensities
from sparkxml.datasets import read_xc
from sparkxml.session import get_session
from sparkxml.synthetic import make_multilabel, rows_frame


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--test")
    ap.add_argument("--num-trees", type=int, default=50)
    ap.add_argument("--pfastrexml", action="store_true",
                    help="PfastreXML: propensity-scored trees and tail classifiers")
    args = ap.parse_args()

    spark = get_session(app_name="fastxml-example")  # spark-submit's session, or local[*]
    if args.data:
        train, test = read_xc(spark, args.data), read_xc(spark, args.test or args.data)
    else:
        X, Y = make_multilabel(n_rows=5000, n_features=2000, n_labels=200, seed=0)
        train = rows_frame(spark, X, Y, 0, 4000, 2000)
        test = rows_frame(spark, X, Y, 4000, 5000, 2000)
    train, test = train.cache(), test.cache()

    est = PfastreXML if args.pfastrexml else FastXML
    fastxml = est(numTrees=args.num_trees, maxLeaf=10, labelsPerLeaf=100, topK=5)
    model = Pipeline(stages=[fastxml]).fit(train)
    pred = model.transform(test).cache()
    pred.select("labels", "prediction", "scores").show(3, truncate=60)

    inv_prop = label_propensities(train)
    for metric, name in (("precisionAtK", "P"), ("ndcgAtK", "nDCG"), ("pspAtK", "PSP")):
        for k in (1, 3, 5):
            ev = XMLEvaluator(metricName=metric, k=k, inversePropensities=inv_prop)
            print(f"{name}@{k} {ev.evaluate(pred):.4f}")

    with tempfile.TemporaryDirectory(prefix="sparkxml-example-") as tmp:
        path = os.path.join(tmp, "pipeline")
        model.write().save(path)
        reloaded = PipelineModel.load(path)
        same = reloaded.transform(test).select("prediction").collect() == \
            pred.select("prediction").collect()
    print(f"saved, reloaded (temporary directory, removed): predicts the same: {same}")


if __name__ == "__main__":
    main()
