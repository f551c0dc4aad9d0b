"""GBTRegressor's objectives beside XGBoost and LightGBM on real count data: accuracy.

    python benchmarks/gbt_objectives.py [--rounds 200] [--depth 6] [--lr 0.1]

UCI Bike Sharing, hourly rentals (``../shared/data/bike_sharing/hour.csv``): target ``cnt``;
features season, yr, mnth, hr, holiday, weekday, workingday, weathersit, temp, atemp, hum,
windspeed; trained on ``dteday`` < 2012-07-01, tested on the rest (a split in time: the
second half of 2012 rents more than the training period, so every model extrapolates).

The three libraries in ONE run with the same rounds, depth, learning rate, bins (256; every
feature here has fewer distinct values, so the bins are the values in all three), L2 1 and
minimum child hessian 1 (LightGBM: num_leaves 2^depth, min_data_in_leaf 1,
min_sum_hessian_in_leaf 1). sparkxml is ``GBTRegressor`` on ``local[2]`` with numWorkers 2.
Base scores are each library's default per objective.

Each objective is scored by what it fits, on the test rows:

* poisson, tweedie (power 1.5), gamma: the mean deviance of that distribution;
* quantile 0.1 / 0.5 / 0.9: the pinball loss, with the coverage (share of test labels at or
  below the prediction);
* absolute_error: the MAE; huber (delta ``--huber-delta``): the mean huber loss, beside
  LightGBM's huber (XGBoost has only the pseudo-huber loss).

For quantile and absolute_error XGBoost also runs with unit weights: it then refits its
leaves to the lower weighted quantile of the residuals (sparkxml's rule with a weightCol),
where without weights it interpolates between neighbours (sparkxml's rule without, the one
these fits use). "ratio" is sparkxml over the better of XGBoost (without
weights) and LightGBM.

Accuracy does not depend on the load, so this script records no timings.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "jvm-free-udfs"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import Results, session  # noqa: E402

DATA = os.environ.get("SPARKXML_DATA",
                      os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
FEATURES = ["season", "yr", "mnth", "hr", "holiday", "weekday", "workingday", "weathersit",
            "temp", "atemp", "hum", "windspeed"]


def load():
    df = pd.read_csv(os.path.join(DATA, "bike_sharing", "hour.csv"))
    train = df["dteday"] < "2012-07-01"
    X, y = df[FEATURES].to_numpy(float), df["cnt"].to_numpy(float)
    return X[train], y[train], X[~train], y[~train]


# ------------------------------------------------------------------------- scores
def poisson_deviance(y, mu):
    ylog = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0) / mu), 0.0)
    return float(np.mean(2 * (ylog - (y - mu))))


def tweedie_deviance(y, mu, p=1.5):
    return float(np.mean(2 * (y ** (2 - p) / ((1 - p) * (2 - p)) - y * mu ** (1 - p) / (1 - p)
                              + mu ** (2 - p) / (2 - p))))


def gamma_deviance(y, mu):
    return float(np.mean(2 * (np.log(mu / y) + y / mu - 1)))


def pinball(y, q, a):
    d = y - q
    return float(np.mean(np.maximum(a * d, (a - 1) * d)))


def huber(y, p, delta):
    z = np.abs(y - p)
    return float(np.mean(np.where(z <= delta, 0.5 * z * z, delta * (z - 0.5 * delta))))


# (name, sparkxml params, xgboost params or None, lightgbm params, score(y, pred), metric)
def cases(delta):
    out = [
        ("poisson", {"objective": "poisson"}, {"objective": "count:poisson"},
         {"objective": "poisson"}, poisson_deviance, "mean poisson deviance"),
        ("tweedie 1.5", {"objective": "tweedie", "tweedieVariancePower": 1.5},
         {"objective": "reg:tweedie", "tweedie_variance_power": 1.5},
         {"objective": "tweedie", "tweedie_variance_power": 1.5}, tweedie_deviance,
         "mean tweedie deviance"),
        ("gamma", {"objective": "gamma"}, {"objective": "reg:gamma"}, {"objective": "gamma"},
         gamma_deviance, "mean gamma deviance"),
        ("absolute_error", {"objective": "absolute_error"}, {"objective": "reg:absoluteerror"},
         {"objective": "regression_l1"}, lambda y, p: float(np.mean(np.abs(y - p))), "MAE"),
        (f"huber {delta:g}", {"objective": "huber", "huberDelta": delta}, None,
         {"objective": "huber", "alpha": delta}, lambda y, p: huber(y, p, delta),
         f"mean huber loss (delta {delta:g})"),
    ]
    for a in (0.1, 0.5, 0.9):
        out.append((f"quantile {a}", {"objective": "quantile", "quantileAlpha": a},
                    {"objective": "reg:quantileerror", "quantile_alpha": a},
                    {"objective": "quantile", "alpha": a},
                    lambda y, p, a=a: pinball(y, p, a), f"pinball loss ({a})"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--huber-delta", type=float, default=50.0)
    ap.add_argument("--only", nargs="*", help="case names to run (default: all)")
    args = ap.parse_args()

    import lightgbm as lgb
    import xgboost as xgb

    from sparkxml import GBTRegressor

    Xtr, ytr, Xte, yte = load()
    res = Results("gbt_objectives")
    spark = session(master="local[2]", app="gbt-objectives")
    pdf = pd.DataFrame(Xtr, columns=FEATURES).assign(label=ytr)
    train = spark.createDataFrame(pdf).cache()
    test = spark.createDataFrame(pd.DataFrame(Xte, columns=FEATURES)).cache()
    train.count(), test.count()
    common = dict(maxIter=args.rounds, maxDepth=args.depth, stepSize=args.lr, maxBins=256,
                  regLambda=1.0, minChildWeight=1.0, numWorkers=2, seed=0,
                  featuresCols=FEATURES)
    xgb_common = dict(max_depth=args.depth, eta=args.lr, max_bin=256, reg_lambda=1.0,
                      min_child_weight=1.0, tree_method="hist", nthread=2)
    lgb_common = dict(max_depth=args.depth, num_leaves=2 ** args.depth,
                      learning_rate=args.lr, max_bin=255, lambda_l2=1.0, min_data_in_leaf=1,
                      min_sum_hessian_in_leaf=1.0, num_threads=2, verbose=-1)
    print(f"bike sharing hour.csv: {len(ytr)} train rows, {len(yte)} test rows; rounds "
          f"{args.rounds}, depth {args.depth}, learning rate {args.lr}")
    print(f"{'case':16s} {'metric':30s} {'sparkxml':>10s} {'xgboost':>10s} {'lightgbm':>10s}"
          f"  ratio to best anchor")
    for name, ours, xp, lp, score, metric in cases(args.huber_delta):
        if args.only and name not in args.only:
            continue
        model = GBTRegressor(**common, **ours).fit(train)
        p_ours = model.transform(test).select("prediction").toPandas()["prediction"].to_numpy()
        preds = {"sparkxml": p_ours}
        if xp is not None:
            bst = xgb.train(dict(xgb_common, **xp), xgb.DMatrix(Xtr, label=ytr), args.rounds)
            preds["xgboost"] = bst.predict(xgb.DMatrix(Xte))
            if ours.get("objective") in ("quantile", "absolute_error"):
                # with weights XGBoost takes the lower weighted quantile in its leaves, without
                # it interpolates (as sparkxml without weightCol): both, to show the rules
                bst = xgb.train(dict(xgb_common, **xp),
                                xgb.DMatrix(Xtr, label=ytr, weight=np.ones(len(ytr))),
                                args.rounds)
                preds["xgboost unit weights"] = bst.predict(xgb.DMatrix(Xte))
        lb = lgb.train(dict(lgb_common, **lp), lgb.Dataset(Xtr, ytr), args.rounds)
        preds["lightgbm"] = lb.predict(Xte)
        scores = {lib: score(yte, p) for lib, p in preds.items()}
        best = min(v for k, v in scores.items() if k in ("xgboost", "lightgbm"))
        cells = [f"{scores[k]:10.4f}" if k in scores else f"{'-':>10s}"
                 for k in ("sparkxml", "xgboost", "lightgbm")]
        line = f"{name:16s} {metric:30s} {' '.join(cells)}  {scores['sparkxml'] / best:.4f}"
        if "xgboost unit weights" in scores:
            line += f"  xgboost unit weights {scores['xgboost unit weights']:.4f}"
        for lib, v in scores.items():
            res.add(f"{lib} {name}", metric, v)
        if name.startswith("quantile"):
            cov = {lib: float(np.mean(yte <= p)) for lib, p in preds.items()}
            line += "  coverage " + " ".join(f"{lib} {c:.3f}" for lib, c in cov.items())
            for lib, c in cov.items():
                res.add(f"{lib} {name}", "coverage", c)
        print(line, flush=True)
    res.write()
    spark.stop()


if __name__ == "__main__":
    main()
