"""The MLflow REST server under load: ``mlflow models serve`` of a sparkxml pipeline
(VectorAssembler + GBTClassifier, saved with ``sparkxml.mlflow.save_model``) on a free
loopback port, hit by ``--clients`` concurrent clients (default 8) for ``--seconds`` (default
60), each request one row; bounded by time and by ``--max-requests`` in all.

    .venv/bin/python benchmarks/serving_under_load.py [--clients 8] [--seconds 60]

Every reply is checked against the prediction the Spark transform gave for that row: the run
reports errors (non-200 replies, exceptions, wrong predictions), latency p50/p99 and
throughput, and records them with the load average (``_harness``: a figure taken on a busy
machine is labelled under load).
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np
from _harness import Results, session

COLS = ["a", "b", "c"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _model(path: str):
    """Train the pipeline on 200 generated rows, save it as an MLflow model; return the rows
    and the Spark transform's predictions."""
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import VectorAssembler

    import sparkxml.mlflow as sxm
    from sparkxml import GBTClassifier

    spark = session(master="local[1]", app="serving-under-load")
    rng = np.random.default_rng(1)
    X = np.round(rng.normal(size=(200, 3)), 3)
    y = (X[:, 0] - X[:, 1] * X[:, 2] > 0).astype(float)
    df = spark.createDataFrame([(*map(float, X[i]), float(y[i])) for i in range(len(y))],
                               [*COLS, "label"])
    pipe = Pipeline(stages=[VectorAssembler(inputCols=COLS, outputCol="features"),
                            GBTClassifier(maxIter=20, maxDepth=4, numWorkers=1,
                                          seed=1)]).fit(df)
    want = [r[0] for r in pipe.transform(df).select("prediction").collect()]
    sxm.save_model(pipe, path)
    spark.stop()
    return X.tolist(), want


def _serve(path: str, port: int):
    bin_dir = os.path.dirname(sys.executable)  # uvicorn of this environment
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
               MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="true")
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "models", "serve", "-m", path,
                             "-h", "127.0.0.1", "-p", str(port), "--env-manager", "local"],
                            env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None:
            raise RuntimeError("the server exited before answering /ping")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=5)
            return proc
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("no answer on /ping in 300 s") from None
            time.sleep(1)


def _client(port, rows, want, seconds, budget, lock, out, seed):
    """One client: a kept-alive connection, one random row a request, until the time is up
    or the shared request budget is spent."""
    rng = np.random.default_rng(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    lat, errors, wrong = [], 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with lock:
            if budget[0] <= 0:
                break
            budget[0] -= 1
        i = int(rng.integers(len(rows)))
        body = json.dumps({"dataframe_split": {"columns": COLS, "data": [rows[i]]}})
        t0 = time.perf_counter()
        try:
            conn.request("POST", "/invocations", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            payload = r.read()
            lat.append(time.perf_counter() - t0)
            if r.status != 200:
                errors += 1
            elif json.loads(payload)["predictions"] != [want[i]]:
                wrong += 1
        except (OSError, http.client.HTTPException, ValueError):
            errors += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.close()
    out.append((lat, errors, wrong))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--max-requests", type=int, default=500_000)
    args = ap.parse_args()
    res = Results("serving_under_load")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model")
        rows, want = _model(path)
        port = _free_port()
        proc = _serve(path, port)
        try:
            res.check_quiet()
            out, lock, budget = [], threading.Lock(), [args.max_requests]
            threads = [threading.Thread(target=_client, args=(port, rows, want, args.seconds,
                                                               budget, lock, out, c))
                       for c in range(args.clients)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
        finally:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
    lat = np.concatenate([np.asarray(o[0]) for o in out]) * 1e3
    errors, wrong = sum(o[1] for o in out), sum(o[2] for o in out)
    case = f"{args.clients} clients, 1 row a request, {args.seconds:g} s"
    figures = [("requests", len(lat), ""), ("errors", errors, ""),
               ("wrong predictions", wrong, ""),
               ("throughput", round(len(lat) / wall, 1), "req/s"),
               ("latency p50", round(float(np.percentile(lat, 50)), 2), "ms"),
               ("latency p99", round(float(np.percentile(lat, 99)), 2), "ms")]
    for metric, value, unit in figures:
        res.add(case, metric, value, unit)
        print(f"{metric}: {value} {unit}")
    res.write()
    return 0 if errors == 0 and wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
