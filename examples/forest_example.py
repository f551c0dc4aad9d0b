"""Decision trees and random forests end to end with the DataFrame API.

Runs unchanged with plain Python (local Spark) or on a cluster:

    python examples/forest_example.py [--data train.svm --test test.svm] [--workers 2]
    spark-submit examples/forest_example.py --data hdfs-visible/train.svm ...

--data/--test take svmlight files (``label idx:value ...``, classes 0..K-1 or 1..K); without
them the example generates a 3-class problem with integer features. It fits a
DecisionTreeClassifier (scikit-learn's tree, when scikit-learn is installed the example checks
it node for node) and a RandomForestClassifier with its out-of-bag score, reports test
accuracy, saves the forest, reloads it with Spark and serves it without Spark through
``sparkxml_kernels.load_model``. Accuracies are fractions in [0, 1]; the forest goes to a
temporary directory removed at the end.
"""
import argparse
import os
import tempfile

import numpy as np
from pyspark.ml.evaluation import MulticlassClassificationEvaluator
from pyspark.ml.linalg import Vectors

import sparkxml_kernels
from sparkxml import DecisionTreeClassifier, RandomForestClassifier
from sparkxml.forest.forest import RandomForestClassificationModel
from sparkxml.session import get_session


def generated(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 50, size=(n, 12)).astype(float)
    y = (X[:, 0] + X[:, 1] > 50).astype(float) + (X[:, 2] * X[:, 3] > 900)
    flip = rng.random(n) < 0.05
    y[flip] = rng.integers(0, 3, flip.sum())
    return X, y


def read_svmlight(path, n_features=None):
    """Dense features and 0-based classes from an svmlight file (1-based feature ids)."""
    from sparkxml_kernels.formats import read_svmlight as read

    y, _, indptr, indices, values, d = read(path, num_features=n_features)[:6]
    X = np.zeros((len(y), d))
    X[np.repeat(np.arange(len(y)), np.diff(indptr)), indices] = values
    return X, np.asarray(y, float) - np.min(y)


def frame(spark, X, y):
    return spark.createDataFrame([(Vectors.dense(r), float(v)) for r, v in zip(X.tolist(), y)],
                                 ["features", "label"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--test")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--trees", type=int, default=100)
    args = ap.parse_args()

    spark = get_session(app_name="forest-example")
    X, y = read_svmlight(args.data) if args.data else generated(8_000, 0)
    Xt, yt = read_svmlight(args.test, X.shape[1]) if args.test else generated(2_000, 1)
    train, test = frame(spark, X, y).cache(), frame(spark, Xt, yt)
    evaluator = MulticlassClassificationEvaluator(metricName="accuracy")

    dt = DecisionTreeClassifier(maxDepth=64, criterion="entropy", seed=0)
    rf = RandomForestClassifier(numTrees=args.trees, maxDepth=64, oobScore=True, seed=0)
    if args.workers:
        dt.setNumWorkers(args.workers)
        rf.setNumWorkers(args.workers)
    tree = dt.fit(train)
    print(f"decision tree: {tree.totalNumNodes} nodes, test accuracy "
          f"{evaluator.evaluate(tree.transform(test)):.4f}")
    try:
        from sklearn.tree import DecisionTreeClassifier as SkTree
    except ImportError:
        pass
    else:
        sk = SkTree(criterion="entropy", random_state=0).fit(X, y).tree_
        ours = tree.treeArrays(0)
        same = all(np.array_equal(ours[k], getattr(sk, k)) for k in ours)
        print(f"  the same tree as scikit-learn's DecisionTreeClassifier(random_state=0): "
              f"{same}")

    forest = rf.fit(train)
    print(f"random forest: {forest.getNumTrees} trees, out-of-bag accuracy "
          f"{forest.outOfBagScore:.4f}, test accuracy "
          f"{evaluator.evaluate(forest.transform(test)):.4f}")
    top = np.argsort(forest.featureImportances.toArray())[::-1][:3]
    print("most important features:", top.tolist())

    with tempfile.TemporaryDirectory(prefix="sparkxml-example-") as tmp:
        path = os.path.join(tmp, "forest-model")
        forest.write().save(path)
        again = RandomForestClassificationModel.load(path)
        print(f"reloaded with Spark, test accuracy "
              f"{evaluator.evaluate(again.transform(test)):.4f}")
        predictor = sparkxml_kernels.load_model(path)  # no Spark needed from here
        pred = predictor.predict(Xt)
    print(f"served without Spark, test accuracy {float((pred == yt).mean()):.4f}")
    spark.stop()


if __name__ == "__main__":
    main()
