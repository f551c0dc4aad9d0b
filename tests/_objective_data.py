"""Generated regression data for the objective tests (kernels and Spark): four features with
few distinct values (XGBoost's and LightGBM's cuts are then the values, as our bins), a
log-linear truth and labels drawn for the objective."""
import numpy as np


def regression_case(objective: str, rng, n: int):
    """(X (n, 4), y) with labels from the objective's family: poisson counts, tweedie
    compound poisson-gamma, gamma, cox survival times (30% censored, negative), otherwise the
    mean plus heavy-tailed (t, 3 df) noise."""
    X = np.column_stack([rng.integers(0, k, n) * 1.0 for k in (12, 5, 30, 7)])
    eta = 0.5 * np.sin(X[:, 0]) + 0.1 * X[:, 1] + 0.02 * X[:, 2]
    mu = np.exp(eta + 1)
    base = objective.partition("[")[0]
    if base == "poisson":
        y = rng.poisson(mu).astype(float)
    elif base == "tweedie":
        y = rng.poisson(mu) * rng.gamma(2, 1, n)
    elif base == "gamma":
        y = rng.gamma(2.0, mu / 2.0)
    elif base == "cox":
        t = rng.exponential(1 / np.exp(eta))
        y = np.where(rng.random(n) < 0.3, -t, t)
    else:
        y = mu + rng.standard_t(3, n)
    return X, y
