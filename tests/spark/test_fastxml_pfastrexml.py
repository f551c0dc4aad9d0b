"""PfastreXML estimator on local[2]: the same model as the kernels, PfastXML, persistence,
Pipelines, params."""
import numpy as np
import pytest
from pyspark.ml import PipelineModel

import sparkxml_kernels
from sparkxml import FastXMLModel, PfastreXML, PfastreXMLModel, XMLEvaluator
from sparkxml.synthetic import csr_rows, make_multilabel, rows_frame
from sparkxml_kernels.fastxml import train_forest
from sparkxml_kernels.fastxml.pfastre import (
    PfastreXMLPredictor,
    propensity_weights,
    tail_centroids,
)
from sparkxml_kernels.persist import ModelFormatError

D, L = 300, 40


@pytest.fixture(scope="module")
def synth(spark):
    X, Y = make_multilabel(n_rows=700, n_features=D, n_labels=L, seed=4)
    train = rows_frame(spark, X, Y, 0, 550, D).cache()
    test = rows_frame(spark, X, Y, 550, 700, D).cache()
    return train, test, (X, Y)


@pytest.fixture(scope="module")
def model(synth):
    return PfastreXML(numTrees=4, numWorkers=2, rowOrder="input", maxLeaf=6).fit(synth[0])


def _predictions(model, df):
    return [(list(r[0]), list(r[1]))
            for r in model.transform(df).select("prediction", "scores").collect()]


def test_same_model_as_the_kernels(synth, model):
    """In input order, the Spark model is the kernels' model on the same rows: trees grown on
    DCG with the inverse propensities as label weights, and the tail centroids."""
    X, Y = synth[2]
    (xi, xj, xv), (yi, yj) = csr_rows(X, Y, 0, 550)
    w = propensity_weights(yi, yj, L)
    forest = train_forest(xi, xj, xv, yi, yj, D, L, range(4), max_leaf=6, label_weight=w,
                          normalise_dcg=False)
    want = dict(forest, inv_prop=w, **tail_centroids(xi, xj, xv, yi, yj, D, L, 1.0))
    for key, value in want.items():
        np.testing.assert_array_equal(model._arrays[key], value, err_msg=key)
    np.testing.assert_allclose(model.inversePropensities, w)
    (ti, tj, tv), _ = csr_rows(X, Y, 550, 700)
    labels, scores = PfastreXMLPredictor(want, D, L, 1.0).predict(ti, tj, tv, 5)
    got = _predictions(model, synth[1])
    assert [p for p, _ in got] == [labels[i, :len(p)].tolist() for i, (p, _) in enumerate(got)]
    assert all(0 < len(p) <= 5 for p, _ in got)
    np.testing.assert_allclose(np.concatenate([s for _, s in got]), scores[scores > 0], rtol=1e-6)


def test_pfastxml_switch_and_model_params(synth, model):
    train, test, _ = synth
    pfast = PfastreXML(numTrees=4, numWorkers=1, rowOrder="input", maxLeaf=6,
                       tailClassifiers=False).fit(train)
    assert not pfast.hasTailClassifiers and model.hasTailClassifiers
    for key in ("children", "w_value", "leaf_label", "leaf_score"):  # the same trees
        np.testing.assert_array_equal(pfast._arrays[key], model._arrays[key])
    trees_only = _predictions(pfast, test)
    with_tail = _predictions(model, test)
    assert trees_only != with_tail
    assert _predictions(model.copy().setTailClassifiers(False), test) == trees_only
    with pytest.raises(ValueError, match="fitted without tail classifiers"):
        pfast.setTailClassifiers(True).transform(test)
    pfast.setTailClassifiers(False)
    # alpha = 1: the tail classifiers no longer change the order of the candidates
    ones = _predictions(model.copy().setAlpha(1.0), test)
    assert [p for p, _ in ones] == [p for p, _ in trees_only]
    # the tail classifiers help the tail: PSP@5 does not drop (it rises on this data)
    ip = model.inversePropensities
    psp = {name: XMLEvaluator(metricName="pspAtK", k=5, inversePropensities=ip)
           .evaluate(m.transform(test)) for name, m in (("pf", pfast), ("pfre", model))}
    assert psp["pfre"] >= psp["pf"], psp


def test_save_load_pipeline_and_kernel_loader(synth, model, tmp_path):
    _, test, (X, Y) = synth
    path = str(tmp_path / "m")
    model.copy().setGamma(20.0).write().save(path)
    loaded = PfastreXMLModel.load(path)
    assert loaded.getGamma() == 20.0 and loaded.hasTailClassifiers
    want = _predictions(model.copy().setGamma(20.0), test)
    assert _predictions(loaded, test) == want
    (ti, tj, tv), _ = csr_rows(X, Y, 550, 700)
    labels, _ = sparkxml_kernels.load_model(path).predict_topk((ti, tj, tv, D), 5)
    assert labels == [p for p, _ in want]
    with pytest.raises(ModelFormatError, match=r"not a sparkxml\.FastXMLModel"):
        FastXMLModel.load(path)
    pipe = PipelineModel(stages=[model.copy().setTopK(3)])
    ppath = str(tmp_path / "pipe")
    pipe.write().save(ppath)
    again = PipelineModel.load(ppath)
    assert isinstance(again.stages[0], PfastreXMLModel)
    a = pipe.transform(test).select("prediction", "scores").collect()
    assert a == again.transform(test).select("prediction", "scores").collect()
    assert all(len(r[0]) <= 3 for r in a)


def test_param_errors(synth):
    train = synth[0]
    for kw, what in ((dict(gamma=0.0), "gamma=0.0"), (dict(alpha=1.5), "alpha=1.5"),
                     (dict(numCandidates=0), "numCandidates=0"),
                     (dict(propensityA=float("nan")), "propensityA=nan")):
        with pytest.raises(ValueError, match=what):
            PfastreXML(numTrees=1, **kw).fit(train)
    with pytest.raises(ValueError, match="propensityB=-2.0 must be > -1"):
        PfastreXML(numTrees=1, propensityB=-2.0).fit(train)
