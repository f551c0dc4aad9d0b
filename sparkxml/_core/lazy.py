"""Lazy package exports: a package names its public classes and the submodule of each, and
imports a submodule only when one of its names is first used.

Why: a Spark Python worker that unpickles a task function defined in, say,
``sparkxml.gbt.tasks`` imports the package ``sparkxml.gbt`` first. Eager exports would import
the estimators and with them ``pyspark.ml`` (about 2 s in every new worker process); lazy
ones keep the worker's imports to numpy, pyarrow and ``sparkxml_kernels``.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_exports(package: str, modules: dict[str, tuple[str, ...]]) -> tuple[
        Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """Return ``(__getattr__, __dir__, __all__)`` for ``package``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    modules : dict of str to tuple of str
        Submodule, relative to ``package`` (``".estimators"``) or absolute -> the public
        names it defines.
    """
    names = {name: module for module, exported in modules.items() for name in exported}

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__, list(names)
