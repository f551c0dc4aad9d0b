"""The "categorical" part of benchmarks/forests.py: a 50-level categorical feature whose
effect is not monotone in its id, learnt by sparkxml's trees and forests with categorical
splits, with the ids one-hot encoded, with the ids as numbers (ordinal), and by Spark MLlib's
trees and forests with the feature declared categorical (VectorIndexer metadata,
maxBins 64).

Data (seeded): ``rows`` training and 20,000 test rows; ``c`` uniform over 50 levels with an
effect drawn N(0, 1) per level (so neighbouring ids are unrelated), five N(0, 1) numeric
features; label 1 when ``effect[c] + 0.5 x0 + 0.5 x1 x2 + 0.5 noise > 0``.
"""
from __future__ import annotations

import time

import numpy as np

LEVELS = 50


def make_categorical_data(n, seed=0):
    rng = np.random.default_rng(seed)
    effect = np.random.default_rng(1234).normal(size=LEVELS)
    c = rng.integers(0, LEVELS, n)
    X = rng.normal(size=(n, 5))
    z = effect[c] + 0.5 * X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=n)
    return c.astype(np.float64), X, (z > 0).astype(np.float64)


def _frames(spark, n, W):
    """(train, test) frames with vector columns: ``cat`` (the level as a nominal attribute,
    from VectorIndexer), ``ordinal`` (the level id as a number), ``onehot`` (50 dummies)."""
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import OneHotEncoder, VectorAssembler, VectorIndexer

    names = ["c"] + [f"x{i}" for i in range(5)]

    def df(rows, seed):
        c, X, y = make_categorical_data(rows, seed)
        data = [tuple([float(a)] + b + [float(v)]) for a, b, v in zip(c, X.tolist(), y)]
        return spark.createDataFrame(data, names + ["label"]).repartition(W)

    train, test = df(n, 0), df(20_000, 1)
    pipe = Pipeline(stages=[
        VectorAssembler(inputCols=names, outputCol="ordinal"),
        VectorIndexer(inputCol="ordinal", outputCol="cat", maxCategories=LEVELS),
        OneHotEncoder(inputCol="c", outputCol="c_hot", dropLast=False),
        VectorAssembler(inputCols=["c_hot"] + names[1:], outputCol="onehot"),
    ]).fit(train)
    train, test = pipe.transform(train).cache(), pipe.transform(test).cache()
    train.count(), test.count()
    return train, test


def part_categorical(spark, W, T, n, skip_mllib, res=None, load=""):
    from pyspark.ml.classification import DecisionTreeClassifier as MLlibDT
    from pyspark.ml.classification import RandomForestClassifier as MLlibRF
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator

    from sparkxml import DecisionTreeClassifier, RandomForestClassifier

    train, test = _frames(spark, n, W)
    ev = MulticlassClassificationEvaluator(metricName="accuracy")
    print(f"\n== categorical: {n} rows, a {LEVELS}-level category (effect not monotone in "
          f"its id) and 5 numeric features; forests of {T} trees depth 10, trees depth 8")
    cases = []
    for enc, col in (("categorical", "cat"), ("one-hot", "onehot"), ("ordinal ids", "ordinal")):
        cases.append((f"sparkxml DecisionTreeClassifier, {enc}", DecisionTreeClassifier(
            featuresCol=col, maxDepth=8, seed=0, numWorkers=W)))
        cases.append((f"sparkxml RandomForestClassifier, {enc}", RandomForestClassifier(
            featuresCol=col, numTrees=T, maxDepth=10, seed=0, numWorkers=W)))
    if not skip_mllib:
        cases.append(("Spark MLlib DecisionTreeClassifier, categorical (maxBins 64)", MLlibDT(
            featuresCol="cat", maxDepth=8, maxBins=64, seed=0)))
        cases.append(("Spark MLlib RandomForestClassifier, categorical (maxBins 64)", MLlibRF(
            featuresCol="cat", numTrees=T, maxDepth=10, maxBins=64, seed=0)))
    print(f"\n| system | test accuracy | fit s (under load{load}) |\n|---|---|---|")
    for name, est in cases:
        t0 = time.perf_counter()
        model = est.fit(train)
        sec = time.perf_counter() - t0
        acc = ev.evaluate(model.transform(test))
        print(f"| {name} | {100 * acc:.2f} % | {sec:.1f} |", flush=True)
        if res is not None:
            res.add(f"categorical {LEVELS} levels: {name}", "test accuracy", 100 * acc, "%")
