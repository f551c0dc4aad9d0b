"""FMRegressor with relation blocks over Spark Connect: a DataFrame block collected through
Connect, the index checks' job, the barrier stage and the model scoring flat vectors."""
import numpy as np
import pytest
import scipy.sparse as sp
from pyspark.ml.linalg import Vectors

from sparkxml import FMRegressor
from sparkxml.datasets import from_csr
from sparkxml_kernels.fm.relation import RelationBlock, expand_relations


def test_fm_relation_blocks_over_connect(spark_connect):
    spark = spark_connect
    rng = np.random.default_rng(0)
    n, nu, ni = 300, 12, 8
    users = sp.eye(nu, format="csr")
    u, i = rng.integers(0, nu, n), rng.integers(0, ni, n)
    y = 0.2 * (u % 3) - 0.3 * (i % 2) + rng.normal(0, 0.1, n)
    df = spark.createDataFrame([(int(u[r]), int(i[r]), float(y[r])) for r in range(n)],
                               ["userIdx", "itemIdx", "label"])
    items = spark.createDataFrame([(b, Vectors.sparse(ni, [b], [1.0])) for b in range(ni)],
                                  ["index", "features"])
    fm = FMRegressor(relationCols=["userIdx", "itemIdx"], relationBlocks=[users, items],
                     factorSize=2, maxIter=8, burnIn=2, numWorkers=2)
    model = fm.fit(df)
    assert [w["world_size"] for w in model.summary.workerInfo] == [2, 2]
    blocks = [RelationBlock.from_matrix(users), RelationBlock.from_matrix(sp.eye(ni))]
    ip, ix, dv, d = expand_relations(np.zeros(n + 1, np.int64), np.zeros(0, np.int32),
                                     np.zeros(0), 0, blocks, np.vstack([u, i]))
    flat = from_csr(spark, ip, ix, dv, d, columns={"label": y})
    p = np.array([r[0] for r in model.transform(flat).select("prediction").collect()])
    np.testing.assert_allclose(p, model._predictor.predict_csr(ip, ix, dv)[1], atol=1e-12)
    assert np.sqrt(np.mean((p - y) ** 2)) < 0.3
    bad = df.withColumn("itemIdx", df.itemIdx + 1)
    with pytest.raises(ValueError, match=r"column 'itemIdx' holds the index 8; "
                                         r"relationBlocks\[1\] has 8 rows"):
        fm.fit(bad)
