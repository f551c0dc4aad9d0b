"""The client half of test_core_storage_server.py, run in its own process (a clean Spark Connect
client: no in-process server, no other session): fits a mixed Pipeline over the separate
server, saves and loads it, and prints what it saw as one JSON line.

Usage: python _storage_client.py sc://localhost:PORT RELATIVE_DIR LOAD_LOG
"""
import json
import os
import sys


def main(url: str, rel: str, load_log: str) -> dict:
    import numpy as np
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.feature import MaxAbsScaler
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import SparkSession

    import sparkxml_kernels
    from sparkxml import FastXML, FastXMLModel
    from sparkxml.synthetic import make_multilabel

    spark = SparkSession.builder.remote(url).getOrCreate()
    out = {"client_cwd": os.getcwd()}
    (xi, xj, xv), (yi, yj) = make_multilabel(n_rows=240, n_features=60, n_labels=12, seed=3)
    rows = [(Vectors.sparse(60, xj[xi[i]:xi[i + 1]].tolist(), xv[xi[i]:xi[i + 1]].tolist()),
             yj[yi[i]:yi[i + 1]].tolist()) for i in range(len(xi) - 1)]
    df = spark.createDataFrame(rows, ["raw", "labels"])
    pipe = Pipeline(stages=[MaxAbsScaler(inputCol="raw", outputCol="features"),
                            FastXML(numTrees=2, numWorkers=2, seed=1)])
    model = pipe.fit(df)
    ref = model.transform(df).select("prediction", "scores").collect()
    model.write().save(rel)  # relative: resolved by the server, against its own directory
    out["client_sees_relative_dir"] = os.path.exists(rel)
    loaded = PipelineModel.load(rel)
    out["stage_classes"] = [type(s).__name__ for s in loaded.stages]
    got = loaded.transform(df).select("prediction", "scores").collect()
    out["pipeline_predictions_equal"] = got == ref
    # the FastXML stage alone, reading its arrays from the saved directory in the tasks
    fx = loaded.stages[1]
    out["stage_stored"] = list(fx._stored) if fx._stored else None
    spark.conf.set("spark.sparkxml.inlineModelBytes", "0")
    spark.conf.set("spark.sparkxml.modelLoadLog", load_log)
    feats = loaded.stages[0].transform(df)
    for _ in range(2):
        got = fx.transform(feats.repartition(4)).select("prediction", "scores").collect()
        out.setdefault("from_directory_equal", []).append(
            sorted(map(tuple, got)) == sorted(map(tuple, ref)))
    df2 = fx.transform(feats)
    out["plan_bytes"] = df2._plan.to_proto(spark.client).ByteSize()
    spark.conf.set("spark.sparkxml.inlineModelBytes", str(8 << 20))
    out["plan_bytes_inline"] = fx.transform(feats)._plan.to_proto(spark.client).ByteSize()
    # a save onto an existing directory is refused (the server says so; no data is lost)
    try:
        fx.write().save(fx._stored.path)
        out["second_save"] = "saved"
    except FileExistsError:
        out["second_save"] = "FileExistsError"
    again = FastXMLModel.load(fx._stored.path)
    out["fx_round_trip"] = all(np.array_equal(again._arrays[k], fx._arrays[k])
                               for k in fx._arrays)
    try:
        FastXMLModel.load(rel + "_missing")
        out["missing"] = "loaded"
    except sparkxml_kernels.ModelFormatError as e:
        out["missing"] = str(e)
    spark.stop()
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:4])))
