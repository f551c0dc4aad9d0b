"""Shared pieces of the Spark tree tests: the compared ``tree_`` arrays and a cached frame."""
from pyspark.ml.linalg import Vectors

FIELDS = ("children_left", "children_right", "feature", "threshold", "impurity",
          "n_node_samples", "weighted_n_node_samples", "value")


def frame(spark, X, y, parts=2):
    """A cached (features vector, label) frame of ``X``, ``y`` in ``parts`` partitions."""
    rows = [(Vectors.dense(r), float(v)) for r, v in zip(X.tolist(), y.tolist())]
    return spark.createDataFrame(rows, ["features", "label"]).repartition(parts).cache()
