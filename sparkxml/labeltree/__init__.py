"""Extreme multi-label classification by label trees: ``Parabel`` and ``Bonsai``.

Modules: ``labeltree`` (estimators and models), ``params``, ``fit`` (training on replicated
data), ``levelwise`` (level-by-level distributed training).
"""
from sparkxml._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    ".labeltree": ("Parabel", "ParabelModel", "Bonsai", "BonsaiModel"),
})
