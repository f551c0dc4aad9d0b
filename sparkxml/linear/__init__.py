"""Linear SVMs by dual coordinate descent or primal Newton: ``LinearSVC``.

Modules: ``svc`` (estimator and model), ``tasks`` (what runs in the Spark tasks).
"""
from sparkxml._core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    ".svc": ("LinearSVC", "LinearSVCModel", "ConvergenceWarning"),
})
