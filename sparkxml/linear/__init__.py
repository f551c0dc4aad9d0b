"""Linear SVMs by dual coordinate descent or primal Newton: ``LinearSVC``.

Modules: ``svc`` (estimator and model), ``tasks`` (what runs in the Spark tasks).
"""
from sparkxml._core.lazy import lazy_exports

_EXPORTS = {"LinearSVC": ".svc", "LinearSVCModel": ".svc", "ConvergenceWarning": ".svc"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
