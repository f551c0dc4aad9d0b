"""Extreme multi-label classification by nDCG-partition trees: ``FastXML`` and
``PfastreXML``.

Modules: ``fastxml`` and ``pfastrexml`` (estimators and models), ``fit`` (training on
replicated data), ``distributed`` (the top levels of each tree grown data-parallel).
"""
from sparkxml._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    ".fastxml": ("FastXML", "FastXMLModel"),
    ".pfastrexml": ("PfastreXML", "PfastreXMLModel"),
})
