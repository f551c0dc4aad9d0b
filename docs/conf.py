"""Sphinx configuration of the sparkxml API reference (built from the numpydoc docstrings).

Build: ``.venv/bin/pip install -e ".[docs]" && .venv/bin/sphinx-build -W -b html docs
docs/_build/html`` (CI does this, warnings as errors)."""
import os
import sys
import warnings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path[:0] = [ROOT, os.path.join(ROOT, "jvm-free-udfs")]

# numpydoc also parses class docstrings on its own and warns about the "Save format" heading
# that _save_format_rubric (below) renders
warnings.filterwarnings("ignore", message="Unknown section Save Format")

project = "sparkxml"
author = "sparkxml developers"
copyright = "sparkxml developers, Apache-2.0"
extensions = ["sphinx.ext.autodoc", "numpydoc"]
exclude_patterns = ["_build", "benchmark_results.rst"]  # included by benchmarks.rst
html_theme = "alabaster"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"          # numpydoc's Parameters sections already give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# pyspark.ml's inherited docstrings are not numpydoc: document only what sparkxml defines
autodoc_inherit_docstrings = False


def _save_format_rubric(app, what, name, obj, options, lines):
    # Every sparkxml Model documents its files under a "Save format" heading, which numpydoc
    # does not know: turn it into a rubric (before numpydoc parses the docstring).
    for i in range(len(lines) - 1):
        if lines[i].strip().lower() == "save format" and set(lines[i + 1].strip()) == {"-"}:
            indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
            lines[i], lines[i + 1] = f"{indent}.. rubric:: Save format", ""


def setup(app):
    app.connect("autodoc-process-docstring", _save_format_rubric, priority=100)
