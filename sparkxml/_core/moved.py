"""Import paths that saved models name in their metadata, kept importable.

A saved model's metadata names its class by import path, and pyspark's ``PipelineModel.load``
imports that path. Models written before the families became subpackages name modules such as
``sparkxml.linear_svm``; each of those paths is served by the family package that holds the
class now, through a module that forwards attribute look-ups to it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Sequence

MOVED = {
    "sparkxml.linear_svm": "sparkxml.linear",
    "sparkxml.ranking": "sparkxml.gbt",
    "sparkxml.tree": "sparkxml.forest",
    "sparkxml.pfastrexml": "sparkxml.fastxml",
    "sparkxml.gbfm": "sparkxml.fm",
    "sparkxml.fields": "sparkxml.fm",
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        target = importlib.import_module(MOVED[module.__name__])
        module.__doc__ = f"Saved models' import path, served by {target.__name__}."
        module.__getattr__ = lambda name: getattr(target, name)  # type: ignore[method-assign]


def install() -> None:
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
