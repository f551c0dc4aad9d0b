"""Extreme multi-label classification by label trees: ``Parabel`` and ``Bonsai``.

Modules: ``labeltree`` (estimators and models), ``params``, ``fit`` (training on replicated
data), ``levelwise`` (level-by-level distributed training).
"""
from sparkxml._core.lazy import lazy_exports

_EXPORTS = {
    "Parabel": ".labeltree", "ParabelModel": ".labeltree",
    "Bonsai": ".labeltree", "BonsaiModel": ".labeltree",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
