"""keywords_of: a class that takes another class's keywords but for a few (ExtraTrees take the
random forests', Bonsai Parabel's, PfastreXML FastXML's) gets them from that class."""
import inspect

import pytest

from sparkxml._core.base import keywords_of


class _Template:
    def f(self, *, a=1, b="x", c=None):
        pass


def test_keywords_of_drops_replaces_and_adds():
    @keywords_of(_Template.f, drop=("c",), add={"d": 2.0}, a=5)
    def g(self, **kwargs):
        pass

    params = inspect.signature(g).parameters
    assert [(n, p.default) for n, p in params.items() if n != "self"] == \
        [("a", 5), ("b", "x"), ("d", 2.0)]
    assert all(p.kind == p.KEYWORD_ONLY for n, p in params.items() if n != "self")


def test_keywords_of_refuses_names_it_cannot_apply():
    with pytest.raises(TypeError, match=r"\['z'\] are not keywords of _Template.f"):
        keywords_of(_Template.f, drop=("z",))
    with pytest.raises(TypeError, match=r"\['z'\] are not keywords"):
        keywords_of(_Template.f, z=1)
    with pytest.raises(TypeError, match=r"\['b'\] already are"):
        keywords_of(_Template.f, add={"b": 1})


def test_derived_estimators_take_exactly_their_keywords():
    from sparkxml import Bonsai, ExtraTreesRegressor, PfastreXML

    assert ExtraTreesRegressor(numTrees=3).getNumTrees() == 3
    assert not ExtraTreesRegressor().getBootstrap()
    # the random forest regressor's quantile keywords are not the extra trees'
    with pytest.raises(TypeError, match="ExtraTreesRegressor.__init__\\(\\) got unknown "
                                        "param\\(s\\) 'quantiles'"):
        ExtraTreesRegressor(quantiles=[0.5])
    assert Bonsai(branchFactor=4).setParams(maxDepth=2).getMaxDepth() == 2
    assert inspect.signature(Bonsai.__init__).parameters["branchFactor"].default == 16
    assert PfastreXML(gamma=5.0, numTrees=2).getGamma() == 5.0
