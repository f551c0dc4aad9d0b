"""Factorization machines (Rendle 2010; libFM's ALS and MCMC learners, mini-batch AdamW) and
Gradient Boosting Factorization Machines (Cheng et al., RecSys 2014). No pyspark.

Modules, one responsibility each:

rng        per-row random streams keyed by row identity, normal quantile, truncated normal
layout     rows in key order, exclusive feature blocks, per-block entry lists
cd         coordinate-update kernels (block sums, cache updates) shared by every solver
solver     per-row caches, losses, the distributed exact block update
als        coordinate descent (squared / logistic loss)
mcmc       Gibbs sampling with Gaussian / Gamma hyper-priors (regression, probit, ordinal)
ordinal    ordered probit: truncated normals between cutpoints, the cutpoint sampler, class
           probabilities
relation   relation blocks (user / item features stored once) in the MCMC sweep
adamw      mini-batch AdamW
ffm        field-aware FMs: the model, its prediction, libffm's adagrad SGD
ffm_cd     field-aware FMs by exact coordinate descent (als) and Gibbs sampling (mcmc)
gbfm       GBFM: greedy field-pair selection and stage fitting
train      entry points for one process or one Spark task
predictor  prediction kernels and model arrays (FM, GBFM)
bpr        the FM ranker's BPR training (implicit feedback)
ranker     the FM ranker's scores and top-k recommendations
"""
from .predictor import FMPredictor, GBFMPredictor

__all__ = ["FMPredictor", "GBFMPredictor"]
