"""Factorization machines and GBFM on rating data, end to end with the DataFrame API.

Runs unchanged with plain Python (local Spark) or on a cluster:

    python examples/fm_example.py [--ratings ratings.csv] [--workers 2]
    spark-submit examples/fm_example.py --ratings hdfs-visible/ratings.csv

--ratings takes a ``user,item,rating`` CSV with a header; without it the example generates
rating-like data with six categorical columns (``sparkxml.synthetic.make_ratings``: user,
item, age, genre, hour, device; only (user, item) and (age, genre) interact). It one-hot
encodes the columns into fields with ``FieldEncoder``, trains an ``FMRegressor`` (MCMC) and a
``GBFMRegressor`` (early stopping on a validation split), prints test RMSE and the field pairs
GBFM chose, saves both models, reloads them with Spark and serves them without Spark through
``sparkxml_kernels.load_model``.
"""
import argparse
import os
import tempfile

import numpy as np
import pandas as pd
from pyspark.ml.evaluation import RegressionEvaluator
from pyspark.sql import functions as F

import sparkxml_kernels
from sparkxml import FieldEncoder, FMRegressor, GBFMRegressor
from sparkxml.fm.fm import FMRegressionModel
from sparkxml.session import get_session
from sparkxml.synthetic import make_ratings


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ratings")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--rows", type=int, default=20000)
    args = ap.parse_args()
    spark = get_session(app_name="sparkxml-fm-example")
    if args.ratings:
        pdf = pd.read_csv(args.ratings)
        pdf.columns = ["user", "item", "rating"] + list(pdf.columns[3:])
        pdf = pdf[["user", "item", "rating"]]
    else:
        cols, rating, planted = make_ratings(args.rows, seed=0)
        pdf = pd.DataFrame(cols)
        pdf["rating"] = rating
        print("planted interactions:", planted)
    cats = [c for c in pdf.columns if c != "rating"]
    df = spark.createDataFrame(pdf).withColumn("split", F.rand(seed=1))
    train = df.filter("split < 0.8").withColumn("isVal", F.col("split") >= 0.7)
    test = df.filter("split >= 0.8")

    enc = FieldEncoder(inputCols=cats).fit(train)
    print("fields:", dict(zip(cats, enc.fieldStarts)), "features:", enc.numFeatures)
    tr, te = enc.transform(train), enc.transform(test)
    evaluator = RegressionEvaluator(labelCol="rating")

    fm = FMRegressor(labelCol="rating", factorSize=8, maxIter=100,
                     fieldStarts=enc.fieldStarts, numWorkers=args.workers).fit(tr)
    print(f"FM (MCMC, {fm.numSamples} samples) test RMSE: "
          f"{evaluator.evaluate(fm.transform(te)):.4f}")

    gb = GBFMRegressor(labelCol="rating", fieldStarts=enc.fieldStarts, numStages=60,
                       factorSize=4, validationIndicatorCol="isVal", earlyStoppingRounds=5,
                       numWorkers=args.workers).fit(tr)
    print(f"GBFM ({len(gb.stages)} stages) test RMSE: "
          f"{evaluator.evaluate(gb.transform(te)):.4f}")
    for s in gb.stages[:6]:
        p, q = s["fields"]
        print(f"  stage {s['stage'] + 1}: ({cats[p]}, {cats[q]})  gain {s['gain']:.5f}")

    with tempfile.TemporaryDirectory() as tmp:
        enc_path, fm_path = os.path.join(tmp, "encoder"), os.path.join(tmp, "fm")
        enc.write().save(enc_path)
        fm.write().save(fm_path)
        again = FMRegressionModel.load(fm_path)
        print(f"reloaded FM test RMSE: {evaluator.evaluate(again.transform(te)):.4f}")
        # serving without Spark: categorical columns -> CSR -> predictions
        vocab = sparkxml_kernels.load_model(enc_path)
        predictor = sparkxml_kernels.load_model(fm_path)
        rows = test.limit(5).toPandas()
        indptr, indices, data, _ = vocab.encode([rows[c].to_numpy() for c in cats])
        pred = predictor.predict((indptr, indices, data, vocab.n_features))
        print("served without Spark:", np.round(pred, 3), "true:", rows["rating"].round(3).tolist())
    spark.stop()


if __name__ == "__main__":
    main()
