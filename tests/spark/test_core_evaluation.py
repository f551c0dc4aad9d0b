"""XMLEvaluator, RankingEvaluator, label_propensities: equal to the kernels on collected data,
clear errors, persistence."""
import numpy as np
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkxml.evaluation import RankingEvaluator, XMLEvaluator, label_propensities
from sparkxml_kernels import metrics as M

XML_SCHEMA = T.StructType([T.StructField("labels", T.ArrayType(T.IntegerType())),
                           T.StructField("prediction", T.ArrayType(T.IntegerType()))])


@pytest.fixture(scope="module")
def xml_data(spark):
    rng = np.random.default_rng(5)
    n, L = 300, 25
    labels = [sorted(rng.choice(L, size=int(rng.integers(0, 5)), replace=False).tolist())
              for _ in range(n)]
    preds = [rng.permutation(L)[:int(rng.integers(0, 8))].tolist() for _ in range(n)]
    labels[3] = None                                     # null = no labels
    df = spark.createDataFrame(list(zip(labels, preds)), XML_SCHEMA).repartition(3).cache()
    rows = df.collect()                                  # the order the evaluator sees
    lab = [r.labels or [] for r in rows]
    Yp = np.cumsum([0] + [len(r) for r in lab])
    Yi = np.array([i for r in lab for i in r], np.int64)
    P = [np.array(r.prediction, np.int64) for r in rows]
    return df, (Yp, Yi, P, L)


@pytest.mark.parametrize("metric", M.XC_METRICS)
def test_xml_evaluator_equals_kernel(spark, xml_data, metric):
    df, (Yp, Yi, P, L) = xml_data
    w = list(np.linspace(1.0, 3.0, L))
    ev = XMLEvaluator(metricName=metric, k=3, inversePropensities=w)
    got = ev.evaluate(df)
    assert got == pytest.approx(M.xc_metric(metric, P, Yp, Yi, 3, w), rel=1e-12)
    assert 0.0 <= got <= 1.0 and ev.isLargerBetter()
    # the params map of evaluate() overrides k
    assert ev.evaluate(df, {ev.k: 1}) == pytest.approx(M.xc_metric(metric, P, Yp, Yi, 1, w))


def test_xml_evaluator_defaults_and_errors(spark, xml_data):
    df, _ = xml_data
    ev = XMLEvaluator()
    assert (ev.getMetricName(), ev.getK(), ev.getLabelsCol(), ev.getPredictionCol()) == \
        ("precisionAtK", 5, "labels", "prediction")
    with pytest.raises(ValueError, match="needs inversePropensities"):
        XMLEvaluator(metricName="pspAtK").evaluate(df)
    with pytest.raises(ValueError, match="metricName='mapAtK' is invalid"):
        XMLEvaluator(metricName="mapAtK").evaluate(df)
    with pytest.raises(ValueError, match="param k=0 is invalid"):
        XMLEvaluator(k=0).evaluate(df)
    with pytest.raises(ValueError, match="prediction column 'pred' not found"):
        XMLEvaluator(predictionCol="pred").evaluate(df)
    scored = df.withColumn("score", F.lit(1.0))
    with pytest.raises(TypeError, match="prediction column 'score' must be array<int>.*double"):
        XMLEvaluator(predictionCol="score").evaluate(scored)
    with pytest.raises(ValueError, match="inversePropensities.*invalid"):
        XMLEvaluator(metricName="pspAtK", inversePropensities=[1.0, float("nan")]).evaluate(df)


def test_xml_evaluator_empty_and_persistence(spark, tmp_path):
    empty = spark.createDataFrame([], XML_SCHEMA)
    assert XMLEvaluator().evaluate(empty) == 0.0
    ev = XMLEvaluator(metricName="psndcgAtK", k=3, inversePropensities=[1.5, 2.0],
                      labelsCol="y")
    ev.write().save(str(tmp_path / "ev"))
    back = XMLEvaluator.load(str(tmp_path / "ev"))
    assert back.uid == ev.uid
    assert (back.getMetricName(), back.getK(), back.getLabelsCol()) == ("psndcgAtK", 3, "y")
    assert back.getInversePropensities() == [1.5, 2.0]
    ev.write().overwrite().save(str(tmp_path / "ev"))


def test_label_propensities_equal_kernel(spark, xml_data):
    df, (Yp, Yi, P, L) = xml_data
    got = label_propensities(df)
    counts = np.bincount(Yi, minlength=L)
    np.testing.assert_allclose(got, M.inverse_propensities(counts, len(Yp) - 1))
    got = label_propensities(df, A=0.6, B=2.6, numLabels=L + 3)
    assert len(got) == L + 3
    np.testing.assert_allclose(got, M.inverse_propensities(
        np.append(counts, [0, 0, 0]), len(Yp) - 1, 0.6, 2.6))
    with pytest.raises(ValueError, match="numLabels"):
        label_propensities(df, numLabels=3)
    with pytest.raises(ValueError, match="labels column 'nope' not found"):
        label_propensities(df, labelsCol="nope")


@pytest.fixture(scope="module")
def rank_data(spark):
    rng = np.random.default_rng(9)
    n = 400
    qid = rng.integers(0, 40, n)
    rel = (rng.integers(0, 5, n) * (rng.random(n) < 0.5)).astype(float)
    score = rng.normal(size=n)           # distinct scores: row order cannot matter
    pdf_rows = [(float(r), float(s), int(q), f"q{q}") for r, s, q in zip(rel, score, qid)]
    df = spark.createDataFrame(pdf_rows, "label double, prediction double, qid long, "
                                         "qname string").cache()
    return df, (rel, score, qid)


@pytest.mark.parametrize("metric", M.RANKING_METRICS)
def test_ranking_evaluator_equals_kernel(spark, rank_data, metric):
    df, (rel, score, qid) = rank_data
    ev = RankingEvaluator(metricName=metric, k=5)
    got = ev.evaluate(df)
    assert got == pytest.approx(M.ranking_metric(metric, score, rel, qid, 5), rel=1e-12)
    assert 0.0 <= got <= 1.0
    by_name = RankingEvaluator(metricName=metric, k=5, groupCol="qname").evaluate(df)
    assert by_name == pytest.approx(got, rel=1e-12)


def test_ranking_evaluator_defaults_errors_persistence(spark, rank_data, tmp_path):
    df, _ = rank_data
    ev = RankingEvaluator()
    assert (ev.getMetricName(), ev.getK(), ev.getLabelCol(), ev.getPredictionCol(),
            ev.getGroupCol()) == ("ndcgAtK", 10, "label", "prediction", "qid")
    with pytest.raises(ValueError, match="group column 'query' not found"):
        RankingEvaluator(groupCol="query").evaluate(df)
    with pytest.raises(TypeError, match="prediction column 'qname' must be numeric"):
        RankingEvaluator(predictionCol="qname").evaluate(df)
    with pytest.raises(ValueError, match="metricName='pspAtK' is invalid"):
        RankingEvaluator(metricName="pspAtK").evaluate(df)
    ev.setMetricName("mapAtK").setK(3).setGroupCol("qname")
    ev.write().save(str(tmp_path / "rank"))
    back = RankingEvaluator.load(str(tmp_path / "rank"))
    assert (back.getMetricName(), back.getK(), back.getGroupCol()) == ("mapAtK", 3, "qname")
    assert back.evaluate(df) == pytest.approx(ev.evaluate(df))
