"""Make docs/gbt_plots.png, the figure in the README: a GBTClassifier on LightGBM's
binary example (7000 train rows, binary.test as validation), its importance, learning curve
and first tree. Run from the repository root:

    .venv/bin/python docs/make_figure.py [--data ../shared/data/lightgbm_binary]
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data",
                                                  "lightgbm_binary"))
    p.add_argument("--out", default=os.path.join(here, "gbt_plots.png"))
    args = p.parse_args()
    from pyspark.sql import functions as F

    from sparkxml import GBTClassifier, plotting
    from sparkxml.datasets import read_tsv
    from sparkxml.session import get_session

    spark = get_session(master="local[2]", app_name="sparkxml-figure")
    try:
        train = read_tsv(spark, os.path.join(args.data, "binary.train"))
        valid = read_tsv(spark, os.path.join(args.data, "binary.test"))
        df = (train.withColumn("isVal", F.lit(False))
              .unionByName(valid.withColumn("isVal", F.lit(True))))
        model = GBTClassifier(maxIter=100, maxDepth=6, stepSize=0.1, numWorkers=2, seed=0,
                              validationIndicatorCol="isVal", evalMetric="auc").fit(df)
        fig = plt.figure(figsize=(13, 8.5), layout="constrained")
        top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.1])
        ax1, ax2 = top.subplots(1, 2)
        plotting.plot_importance(model, max_num_features=10, ax=ax1,
                                 title="Feature importance (total gain, top 10)")
        plotting.plot_learning_curve(model, ax=ax2, title="Validation AUC per round")
        plotting.plot_tree(model, tree_index=0, max_depth=3, ax=bottom.subplots(),
                           title="Tree 0, down to depth 3")
        fig.savefig(args.out, dpi=80)
        print(f"wrote {args.out}; best validation AUC {model.summary.bestScore:.4f} at round "
              f"{model.summary.bestIteration + 1}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
