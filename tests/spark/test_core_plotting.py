"""sparkxml.plotting on a fitted GBT model and on bare tree arrays (Agg backend)."""
import os

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sparkxml import plotting  # noqa: E402

NAMES = ["signal", "weak", "noise_a", "noise_b"]


@pytest.fixture(scope="module")
def model(spark):
    from pyspark.sql import functions as F

    from sparkxml import GBTClassifier
    from sparkxml.datasets import from_dense

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + 0.3 * X[:, 1] + 0.2 * rng.normal(size=400) > 0).astype(float)
    df = from_dense(spark, X, columns={"label": y, "row": np.arange(400)})
    df = df.withColumn("isVal", F.col("row") >= 300)
    return GBTClassifier(maxIter=6, maxDepth=3, numWorkers=1, validationIndicatorCol="isVal",
                         seed=0).fit(df)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_importance_bars_match_the_model(model):
    ax = plotting.plot_importance(model, feature_names=NAMES, max_num_features=3)
    gain = model.predictor.feature_importances("gain", normalize=False)
    widths = [p.get_width() for p in ax.patches]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # bars and tick labels in drawing order: the largest first, on top
    order = [i for i in np.argsort(-gain, kind="stable") if gain[i] > 0][:3]
    np.testing.assert_allclose(widths, gain[order])
    assert labels == [NAMES[i] for i in order] and labels[0] == "signal"
    assert ax.patches[0].get_y() > ax.patches[-1].get_y()
    split = plotting.plot_importance(model, importance_type="split", max_num_features=None)
    assert sum(p.get_width() for p in split.patches) == (model.predictor.left >= 0).sum()
    with pytest.raises(ValueError, match="4 features"):
        plotting.plot_importance(model, feature_names=["a", "b"])
    with pytest.raises(ValueError):
        plotting.plot_importance(np.zeros(3))


def test_learning_curve_draws_each_history_and_best_round(model):
    s = model.summary
    ax = plotting.plot_learning_curve(model)
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    np.testing.assert_allclose(lines["validation"].get_ydata(), s.validationHistory)
    assert list(lines["validation"].get_xdata()) == list(range(1, len(s.validationHistory) + 1))
    assert lines[f"best round {s.bestIteration + 1}"].get_xdata()[0] == s.bestIteration + 1
    assert ax.get_ylabel() == s.metricName

    class Summary:  # a summary that also keeps the training history
        metricName, bestIteration = "rmse", 1
        validationHistory, trainingHistory = [3.0, 2.0, 2.5], [2.9, 1.5, 1.0]

    ax = plotting.plot_learning_curve(Summary())
    assert {"training", "validation"} <= {ln.get_label() for ln in ax.get_lines()}

    class Empty:
        validationHistory = []

    with pytest.raises(ValueError, match="validationIndicatorCol"):
        plotting.plot_learning_curve(Empty())


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_tree_plot_of_a_model_tree(model, tmp_path):
    t = plotting.tree_arrays(model, 2)
    ax = plotting.plot_tree(model, tree_index=2, feature_names=NAMES)
    texts = _texts(ax)
    n_leaves = int((t["left"] < 0).sum())
    assert sum(s.startswith("leaf ") for s in texts) == n_leaves
    root = f"{NAMES[t['feature'][0]]} <= {t['threshold'][0]:.3g}"
    assert root in texts
    n_internal = len(t["left"]) - n_leaves
    # every split has a yes and a no edge; the default direction also says "missing"
    assert sum(s.startswith("yes") for s in texts) == n_internal
    assert sum("missing" in s for s in texts) == n_internal
    out = tmp_path / "tree.png"
    ax.figure.savefig(out)
    assert out.stat().st_size > 1000
    with pytest.raises(ValueError, match="tree_index"):
        plotting.plot_tree(model, tree_index=model.getNumTrees)


def test_tree_plot_from_bare_arrays_and_depth_cut():
    # a forest-style single tree: root splits f1, its left child splits f0
    tree = {"feature": [1, 0, -1, -1, -1], "threshold": [0.5, -1.0, 0, 0, 0],
            "left": [1, 3, -1, -1, -1], "right": [2, 4, -1, -1, -1],
            "value": [0, 0, 0.25, -1.5, 2.0]}
    texts = _texts(plotting.plot_tree(tree))
    assert "f1 <= 0.5" in texts and "f0 <= -1" in texts
    assert sorted(s for s in texts if s.startswith("leaf")) == ["leaf -1.5", "leaf 0.25",
                                                                 "leaf 2"]
    assert not any("missing" in s for s in texts)        # no default_left given
    cut = _texts(plotting.plot_tree(tree, max_depth=1))
    assert "..." in cut and "f0 <= -1" not in cut
    bad = dict(tree, left=[1, 7, -1, -1, -1])
    with pytest.raises(ValueError, match="malformed"):
        plotting.plot_tree(bad)
    with pytest.raises(ValueError, match="lack"):
        plotting.plot_tree({"feature": [0]})


def test_readme_figure_exists():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "gbt_plots.png")
    assert os.path.getsize(path) > 10_000
