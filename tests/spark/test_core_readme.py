"""The README's quick starts run as a newcomer pastes them: every ``python`` block on its
own, with nothing defined beforehand (``get_session`` hands each the test session), leaving
no model directory behind."""
import contextlib
import io
import os
import re
import tempfile

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def _blocks():
    with open(README) as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_has_a_quick_start_per_family():
    joined = "\n".join(_blocks())
    for name in ("FastXML", "PfastreXML", "GBTClassifier", "LambdaMART", "LinearSVC",
                 "FMRegressor", "GBFMRegressor", "FieldEncoder", "DecisionTreeClassifier",
                 "RandomForestClassifier"):
        assert f"{name}(" in joined, name


@pytest.mark.parametrize("i", range(len(_blocks())))
def test_readme_snippet_runs_on_its_own(spark, i, tmp_path, monkeypatch):
    code = _blocks()[i]
    # a temp dir of this test's own, so that what other processes (parallel test workers,
    # Spark) create in /tmp meanwhile cannot be mistaken for the snippet's leftovers
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = set(os.listdir(tempfile.gettempdir()))
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, f"README.md python block {i + 1}", "exec"), {"__name__": "readme"})
    left = set(os.listdir(tempfile.gettempdir())) - before
    # the snippets save into TemporaryDirectory(): nothing of theirs may remain
    assert not [d for d in left if os.path.isdir(
        os.path.join(tempfile.gettempdir(), d)) and os.listdir(
        os.path.join(tempfile.gettempdir(), d))], left
