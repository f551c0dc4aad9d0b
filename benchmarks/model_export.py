"""GBT native export: for a binary (lightgbm_binary), a multiclass (pendigits, 10 classes) and
a ranking (lightgbm_rank, LambdaMART) model, each format's export time and file size, how
closely the target runtime's predictions agree with ``sparkxml_kernels``' (max relative
difference, 5% of the feature values missing; ONNX both with float32 input and with
``dtype="float64"``), and the time to predict 100k rows and one row
in the target runtime beside ``sparkxml_kernels``' predictor (one thread each).

    .venv/bin/python benchmarks/model_export.py [--rounds 100] [--depth 6] [--rows 100000]

The models are trained by the GBT kernels (``sparkxml_kernels.gbt.booster``, no Spark: the
export reads only the model). Data from ``tests/data``. Results: ``benchmarks/results/
model_export.json`` (``python benchmarks/report.py``).
"""
import argparse
import os
import tempfile
import time

import numpy as np
from _harness import ROOT, Results, best_of

from sparkxml_kernels import binning
from sparkxml_kernels.export import export_model
from sparkxml_kernels.gbt import booster

DATA = os.path.join(ROOT, "tests", "data")


def _svmlight(path, d):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(path, n_features=d)
    return X.toarray(), y


def datasets():
    """(name, X, y, groups, params) per model kind."""
    b = np.loadtxt(os.path.join(DATA, "lightgbm_binary", "binary.train"))
    Xp, yp = _svmlight(os.path.join(DATA, "pendigits", "pendigits"), 16)
    Xr, yr = _svmlight(os.path.join(DATA, "lightgbm_rank", "rank.test"), 300)
    q = np.loadtxt(os.path.join(DATA, "lightgbm_rank", "rank.test.query"), dtype=np.int64)
    return [("binary (lightgbm_binary)", b[:, 1:], b[:, 0], None, {"objective": "logistic"}),
            ("multiclass (pendigits)", Xp, yp - 1, None,  # labels 1..10
             {"objective": "softmax", "numClasses": 10}),
            ("ranking (lightgbm_rank)", Xr, yr, np.concatenate([[0], np.cumsum(q)]),
             {"objective": "lambdarank"})]


def _with_missing(X, seed=0):
    """Float32 values (what XGBoost and ONNX read) with 5% of them missing."""
    X = X.astype(np.float32).astype(np.float64)
    X[np.random.default_rng(seed).random(X.shape) < 0.05] = np.nan
    return X


def runtimes(fmt, path):
    """(predict(X) -> the sparkxml-comparable output, name) for the target runtime
    ("onnx-float64": the ONNX graph exported with ``dtype="float64"``, fed float64)."""
    if fmt == "xgboost-json":
        import xgboost as xgb

        bst = xgb.Booster(model_file=path)
        bst.set_param({"nthread": 1})
        return lambda X: bst.inplace_predict(X), "xgboost " + xgb.__version__
    if fmt == "lightgbm-text":
        import lightgbm as lgb

        bst = lgb.Booster(model_file=path)
        return lambda X: bst.predict(X, num_threads=1), "lightgbm " + lgb.__version__
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])

    dtype = np.float64 if fmt == "onnx-float64" else np.float32

    def run(X):
        out = sess.run(None, {"features": X.astype(dtype)})
        if len(out) == 1:
            return out[0][:, 0]
        return out[1][:, 1] if out[1].shape[1] == 2 else out[1]  # P(class 1) when binary

    return run, "onnxruntime " + ort.__version__


def single_row_ms(fn, X, n=300):
    """Median milliseconds of one-row predictions."""
    times = []
    for i in range(n):
        row = X[i % X.shape[0]:i % X.shape[0] + 1]
        t = time.perf_counter()
        fn(row)
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()
    res = Results("model_export")
    tmp = tempfile.mkdtemp()
    for name, X, y, groups, params in datasets():
        X = _with_missing(X)
        edges = binning.edges_from_sketch(binning.sketch(X, None, 256), 256)
        pred, _ = booster.train(binning.bin_data(X, edges), y, None, edges,
                                dict(params, maxIter=args.rounds, maxDepth=args.depth),
                                group_ptr=groups)
        binary = pred.objective == "logistic"

        def ours(Xq):
            p = pred.predict(Xq)
            return p[:, 1] if binary else p

        big = X[np.arange(args.rows) % X.shape[0]]
        want = ours(X)
        ours(X[:10])  # compiled before timing
        t_ours = best_of(lambda: ours(big), 3)
        lat_ours = single_row_ms(ours, X)
        print(f"\n== {name}: {pred.n_trees} trees; sparkxml_kernels: {args.rows} rows "
              f"{t_ours:.3f} s, one row {lat_ours:.3f} ms")
        res.add(f"{name}: sparkxml_kernels", f"predict {args.rows} rows", t_ours, "s")
        res.add(f"{name}: sparkxml_kernels", "predict one row (median)", lat_ours, "ms")
        for fmt, ext in (("xgboost-json", "json"), ("lightgbm-text", "txt"), ("onnx", "onnx"),
                         ("onnx-float64", "onnx")):
            path = os.path.join(tmp, f"m.{ext}")
            opts = {"dtype": "float64"} if fmt == "onnx-float64" else {}
            t_exp = best_of(lambda: export_model(pred, path, fmt.partition("-float")[0],
                                                 overwrite=True, **opts), 3)
            size = os.path.getsize(path)
            fn, runtime = runtimes(fmt, path)
            got = fn(X)
            rel = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-12)))
            absd = float(np.max(np.abs(got - want)))
            fn(X[:10])
            t_big = best_of(lambda: fn(big), 3)
            lat = single_row_ms(fn, X)
            print(f"{fmt:14s} {runtime:22s} export {t_exp:.3f} s, {size / 2**20:.2f} MiB; "
                  f"max rel diff {rel:.2e} (abs {absd:.2e}); {args.rows} rows {t_big:.3f} s; "
                  f"one row {lat:.3f} ms")
            case = f"{name}: {fmt} ({runtime})"
            res.add(case, "export", t_exp, "s")
            res.add(case, "file size", size / 2**20, "MiB")
            res.add(case, "max relative difference", rel, "")
            res.add(case, f"predict {args.rows} rows", t_big, "s")
            res.add(case, "predict one row (median)", lat, "ms")
    res.write()


if __name__ == "__main__":
    main()
