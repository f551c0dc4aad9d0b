"""The code trees and forests run inside Spark tasks: the barrier-stage training function
and the predict function (loading and sketching are ``sparkxml._core.histogram_tasks``').

Like ``histogram_tasks``, this module imports no ``pyspark.ml`` (a fresh Python worker unpickling
these closures stays cheap) and its functions capture plain values only.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from sparkxml._core.arrow import batch_features, dense_vectors
from sparkxml._core.histogram_tasks import task_sketch_info
from sparkxml._core.workers import worker_threads
from sparkxml_kernels.forest.predictor import ForestPredictor
from sparkxml_kernels.model_cache import as_handle


def make_tree_train_fn(cfg: dict, progress: dict | None = None):
    """The barrier task's training function. ``progress`` (``FitProgress.task_spec()``):
    rank 0 reports trees done to the driver.

    ``cfg`` (plain values): kind ("tree" | "forest"), split (``SplitParams`` fields), n_classes,
    criterion (name), vals (list of lists), edges (list of lists; vals and edges None when
    the loader computed them), n_features, class_weights
    (list or None), label_values (absolute_error: the distinct labels, ascending; the split
    params' n_classes is their number), rand_state (trees), n_trees / seed / bootstrap /
    rate / oob / balanced_subsample (forests).
    """

    def train_fn(state, coll, rank, world):
        from sparkxml_kernels.forest import builder, forest, histogram
        from sparkxml_kernels.forest.bins import tree_binned
        from sparkxml_kernels.forest.criteria import NO_VALUES, is_classification
        from sparkxml_kernels.forest.exactsum import exact_sums
        from sparkxml_kernels.forest.pruning import prune_forest, prune_tree
        from sparkxml_kernels.forest.tree import SplitParams, TreeArrays
        from sparkxml_kernels.progress import ProgressReporter

        if state.get("error"):  # bad input found by the task's own sketch
            return None, {"error": state["error"]}
        X, y, keys = state["X"], state["y"], state["ids"]
        n = y.size
        rw = np.ones(n) if state["w"] is None else np.asarray(state["w"], np.float64)
        params = SplitParams(**cfg["split"])
        K = cfg["n_classes"]
        cls = np.zeros(n, np.int32)
        if is_classification(params.criterion):
            cls = y.astype(np.int32)
            if cfg.get("class_weights") is not None:
                rw = rw * np.asarray(cfg["class_weights"], np.float64)[cls]
        yv = NO_VALUES
        if cfg.get("label_values") is not None:  # absolute_error: each row's label index
            yv = np.asarray(cfg["label_values"], np.float64)
            cls = np.searchsorted(yv, y).astype(np.int32)
        ylny = histogram.ylny(y) if cfg["criterion"] == "poisson" else np.zeros(n)
        # None in cfg: the loader computed them (``make_sketch_load_fn``)
        vals = np.asarray(state["vals"] if cfg["vals"] is None else cfg["vals"], np.float64)
        X = tree_binned(X, vals)  # missing values to the trees' last bin slot
        edges = [np.asarray(e, np.float64)
                 for e in (state["edges"] if cfg["edges"] is None else cfg["edges"])]
        d = cfg["n_features"]
        n_cat = cfg.get("n_categories")
        is_cat = None if n_cat is None else (np.asarray(n_cat) > 0).astype(np.uint8)
        n_cat = None if n_cat is None else np.asarray(n_cat, np.int64)
        info = {"n_train": int(n), "binned_bytes": int(X.nbytes),
                "load_timing": state.get("timing")}
        info.update(task_sketch_info(state))
        arrays = None
        reporter = ProgressReporter(progress if rank == 0 else None, rank)
        try:
            if cfg["kind"] == "tree":
                tree = builder.grow_tree(X, cls, y, ylny, rw, params, coll, vals, edges,
                                         cfg["rand_state"], yv, is_cat=is_cat)
                if rank == 0 and cfg.get("ccp_alpha", 0.0) > 0.0:
                    tree = TreeArrays(**prune_tree(tree.as_dict(), cfg["ccp_alpha"]))
                if rank == 0:
                    arrays = ForestPredictor.from_trees([tree], d, K, cfg["criterion"],
                                                        n_categories=n_cat).to_arrays()
                    reporter.progress(1, 1, {"nodes": int(tree.node_count)}, unit="tree")
                return arrays, info
            res, counts = forest.grow_forest(
                X, cls, y, ylny, rw, keys, params, cfg["n_trees"], cfg["seed"],
                cfg["bootstrap"], cfg["rate"], coll, vals, edges,
                on_trees_done=_trees_done_callback(reporter) if reporter.enabled else None,
                balanced_subsample=bool(cfg.get("balanced_subsample")), yv=yv,
                is_cat=is_cat,
                n_threads=worker_threads(cfg.get("nthread")))
        finally:
            reporter.close()
        info["forest_timing"] = getattr(forest.grow_forest, "last_timing", None)
        if rank == 0:
            # each tree pruned as scikit-learn's forests prune theirs (before the OOB score)
            res = prune_forest(res, cfg.get("ccp_alpha", 0.0))
            arrays = ForestPredictor.from_arrays(dict(
                {k: v for k, v in res.items() if k != "bin"}, n_features=d, n_classes=K,
                criterion=cfg["criterion"], n_categories=n_cat)).to_arrays()
        route = None
        if cfg["oob"] or cfg.get("leaf_samples"):
            packed = coll.reduce_and_decide(
                np.zeros(1), lambda _: forest.pack_for_routing(res) if rank == 0 else None)
            route = forest.unpack_for_routing(packed)
        if cfg.get("leaf_samples"):
            from sparkxml_kernels.forest.quantiles import gather_leaf_samples

            samples = gather_leaf_samples(coll, X, counts, route, vals.shape[1] - 1, y,
                                          state["w"], int(route["feature"].size))
            if rank == 0:
                arrays.update(samples)
        if cfg["oob"]:
            sums, n_oob = forest.oob_sums(X, counts, route, vals.shape[1] - 1)
            stats = exact_sums(coll, forest.oob_terms(sums, n_oob, y, K))
            if rank == 0:
                arrays["oob_score"] = np.asarray(forest.oob_score(stats, K), np.float64)
        return arrays, info

    return train_fn


def _trees_done_callback(reporter):
    """``grow_forest``'s level callback: a line each time the trees done pass a multiple of
    ``verbose`` (several trees finish in one level), and when all are."""

    last = [0]

    def cb(done, total):
        every = reporter.every
        if done > last[0] and (done // every > last[0] // every or done == total):
            reporter.progress(done, total, unit="tree", force=True)
        last[0] = done

    return cb


def _tree_outputs(pred: ForestPredictor, X, kinds, single_tree: bool, quantiles=None):
    """Output columns of a transform: prediction, for classifiers rawPrediction (the leaf's
    weighted class counts for one tree, the sum of the trees' class fractions for a forest,
    as Spark ML) and probability (the trees' mean class fractions), and the leaf indices
    (per tree, the reached leaf's index among its tree's leaves left to right, as leafCol
    counts them for GBT and Spark MLlib) and the quantiles (quantile forests)."""
    n = X.shape[0]
    K = pred.n_classes
    leaves = pred.apply(X) if n else np.zeros((0, pred.n_trees), np.int64)
    v = pred.value[leaves].mean(axis=1) if n else np.zeros((0, pred.value.shape[1]))
    out = []
    for k in kinds:
        if k == "quant":  # array<double> per row, one per requested quantile
            qs = pred.predict_quantiles(X, quantiles) if n else np.zeros((0, len(quantiles)))
            out.append(pa.ListArray.from_arrays(
                pa.array(np.arange(n + 1, dtype=np.int32) * len(quantiles)),
                pa.array(qs.reshape(-1), pa.float64())))
        elif k == "leaf":
            out.append(dense_vectors(pred.leaf_ordinals()[leaves].astype(np.float64)))
        elif k == "raw":
            w = pred.weighted_n_node_samples[leaves[:, 0]][:, None] if single_tree \
                else pred.n_trees
            out.append(dense_vectors(v * w))
        elif k == "prob":
            out.append(dense_vectors(v))
        elif K:
            out.append(pa.array(np.argmax(v, axis=1).astype(np.float64) if n
                                else np.zeros(0), pa.float64()))
        else:
            out.append(pa.array(np.asarray(v[:, 0], np.float64), pa.float64()))
    return out


def make_tree_predict_fn(model, spec, n_features, kinds, names, drop=None, quantiles=None):
    """The ``mapInArrow`` function of a tree/forest model's transform (``model``: a
    ``ModelHandle`` or the arrays)."""
    handle = as_handle(model)

    def predict(batches):
        pred = handle.build("ForestPredictor", ForestPredictor.from_arrays)
        single = pred.n_trees == 1
        for b in batches:
            keep = [i for i, nm in enumerate(b.schema.names) if nm != drop]
            cols = [b.column(i) for i in keep]
            X = batch_features(b, spec, n_features) if b.num_rows else \
                np.zeros((0, n_features))
            cols += _tree_outputs(pred, X, kinds, single, quantiles)
            yield pa.RecordBatch.from_arrays(cols, names=[b.schema.names[i] for i in keep]
                                             + names)

    return predict


def make_oob_fn(model, spec, n_features, weight, forest_cfg, id_col):
    """The ``mapInArrow`` function of a forest's out-of-bag decision function: each row's
    bootstrap counts are drawn again from its content key (column ``id_col``, the fit's
    ``xxhash64``) as the fit drew them, and the leaf values of the trees it is out of bag for
    are averaged (NaN for a row in every tree's sample)."""
    handle = as_handle(model)
    seed, boot, rate = forest_cfg["seed"], forest_cfg["bootstrap"], forest_cfg["rate"]

    def oob(batches):
        from sparkxml_kernels.forest.bootstrap import bootstrap_counts

        pred = handle.build("ForestPredictor", ForestPredictor.from_arrays)
        K = pred.value.shape[1]
        for b in batches:
            n = b.num_rows
            X = batch_features(b, spec, n_features) if n else np.zeros((0, n_features))
            keys = np.asarray(b.column(id_col).to_numpy(zero_copy_only=False), np.int64)
            counts = bootstrap_counts(keys, seed, pred.n_trees, boot, rate)
            if weight is not None:
                w = np.asarray(b.column(weight).to_numpy(zero_copy_only=False), np.float64)
                counts[:, ~(w > 0)] = 0
            out = np.zeros((n, K))
            if n:
                out_of_bag = (counts == 0).T  # (n, T)
                vals = pred.value[pred.apply(X)]  # (n, T, K)
                n_oob = out_of_bag.sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    out = (vals * out_of_bag[:, :, None]).sum(axis=1) / n_oob[:, None]
            yield pa.RecordBatch.from_arrays(
                [b.column(i) for i in range(b.num_columns)] + [dense_vectors(out)],
                names=list(b.schema.names) + ["__oob__"])

    return oob


def make_permutation_fn(model, spec, n_features, label, weight, metric, n_repeats, seed,
                        block_col, key_col):
    """The ``mapInArrow`` function of the distributed permutation importance: every block of
    rows (column ``block_col``) in a partition, its rows in content-key order (``key_col``;
    equal keys are equal rows), gives its ``importance.block_importance_terms`` as rows
    (block, index, s0..s3)."""
    handle = as_handle(model)

    def run(batches):
        from sparkxml_kernels.forest.importance import block_importance_terms

        pred = handle.build("ForestPredictor", ForestPredictor.from_arrays)
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return
        t = pa.concat_tables(tables).combine_chunks()
        blocks = np.asarray(t.column(block_col).to_numpy(), np.int64)
        keys = np.asarray(t.column(key_col).to_numpy(), np.int64)
        order = np.lexsort((keys, blocks))
        X = np.concatenate([batch_features(b, spec, n_features) for b in t.to_batches()])
        y = np.asarray(t.column(label).to_numpy(zero_copy_only=False), np.float64)
        w = None if weight is None else np.asarray(
            t.column(weight).to_numpy(zero_copy_only=False), np.float64)
        X, y, blocks = X[order], y[order], blocks[order]
        w = None if w is None else w[order]
        starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
        ends = np.r_[starts[1:], blocks.size]
        for a, e in zip(starts, ends):
            terms = block_importance_terms(
                lambda A: np.asarray(pred.predict(A), np.float64), X[a:e], y[a:e], metric,
                n_repeats, seed, int(blocks[a]), None if w is None else w[a:e])
            m = terms.shape[0]
            cols = [pa.array(np.full(m, blocks[a], np.int64)),
                    pa.array(np.arange(m, dtype=np.int64))]
            cols += [pa.array(terms[:, i]) for i in range(4)]
            yield pa.RecordBatch.from_arrays(cols, names=["block", "index", "s0", "s1", "s2",
                                                          "s3"])

    return run
