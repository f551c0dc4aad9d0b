"""The docstring examples of a package, as pytest cases: every module of the package is
imported and every docstring with an example becomes one case, so a new example runs without
being listed anywhere. Examples that use ``spark`` run in tests/spark on its session (no
second JVM); tests/kernels runs the others."""
import doctest
import importlib
import io
import pkgutil
import re

import pytest

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
# sparkxml.cli.__main__ runs the CLI when imported
NOT_IMPORTED = {"sparkxml.cli.__main__"}


def _docstring_tests(module_name: str) -> list:
    """The module's doctests with an example that runs (classes and their methods included;
    a docstring whose examples are all ``+SKIP`` shows a call it cannot make here)."""
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [t for t in finder.find(module, module_name)
            if any(not e.options.get(doctest.SKIP) for e in t.examples)]


def _uses_spark(test) -> bool:
    return any(re.search(r"\bspark\b", e.source) for e in test.examples)


def cases(package_name: str, spark: bool | None = None) -> list:
    """A ``pytest.param(module, test name)`` per docstring with examples in the package;
    ``spark`` True or False: only the docstrings whose examples use ``spark``, or only the
    others."""
    package = importlib.import_module(package_name)
    names = [package_name] + sorted(
        m.name for m in pkgutil.walk_packages(package.__path__, package_name + ".")
        if m.name not in NOT_IMPORTED)
    out = []
    for name in names:
        for t in _docstring_tests(name):
            if spark is not None and _uses_spark(t) != spark:
                continue
            out.append(pytest.param(name, t.name, id=t.name))
    return out


def run(module_name: str, test_name: str, **names) -> None:
    """Run one docstring's examples with ``names`` (and ``np``) in their globals; fail with
    doctest's report, or when no example ran."""
    import numpy as np

    [test] = [t for t in _docstring_tests(module_name) if t.name == test_name]
    test.globs.update(np=np, **names)
    out = io.StringIO()
    result = doctest.DocTestRunner(optionflags=FLAGS).run(test, out=out.write)
    assert result.failed == 0, out.getvalue()
    assert result.attempted > 0, f"{test_name}: no example ran"
