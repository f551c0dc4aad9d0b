"""Extreme multi-label classification by nDCG-partition trees: ``FastXML`` and
``PfastreXML``.

Modules: ``fastxml`` and ``pfastrexml`` (estimators and models), ``fit`` (training on
replicated data), ``distributed`` (the top levels of each tree grown data-parallel).
"""
from sparkxml._core.lazy import lazy_exports

_EXPORTS = {
    "FastXML": ".fastxml", "FastXMLModel": ".fastxml",
    "PfastreXML": ".pfastrexml", "PfastreXMLModel": ".pfastrexml",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
