"""Where the tests find research data files (pendigits, a9a, Bibtex, the LightGBM examples...).

``data_path("a9a", "a9a")`` gives the path of one file, looked for in this order:

1. ``tests/data/<name>/...``: the small copies committed with the tests (tests/data/README.md
   lists them, their sources and licences);
2. ``$SPARKXML_DATA/<name>/...`` when ``SPARKXML_DATA`` is set: the folder holding the data
   sets, absolute or relative to the repository root (CI sets ``../shared/data``). Set but
   empty, or naming a folder that does not exist, means "no external data": step 3 is then
   not tried, which is how to check what a fresh clone skips;
3. only when ``SPARKXML_DATA`` is unset: ``../shared/data`` beside the repository, if it
   exists.

A file found nowhere skips the test with the reason (set SPARKXML_DATA), except under
``SPARKXML_REQUIRE_DATA=1`` (CI), where it fails the test naming the missing file: there a
missing data set is a broken setup, not a reason to pass.

Call it inside a test or fixture (it may skip); at module level use :func:`find_data`, which
returns None instead. A plain module, so test files import it (``from _data import
data_path``); tests/conftest.py also offers it as the ``data_path`` fixture.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "tests" / "data"
BESIDE = ROOT.parent / "shared" / "data"


def external_root() -> Optional[Path]:
    """The folder of the external data sets, or None when there is none to look in."""
    env = os.environ.get("SPARKXML_DATA")
    if env is None:
        return BESIDE if BESIDE.is_dir() else None
    if not env.strip():
        return None
    p = Path(env).expanduser()
    return p if p.is_absolute() else ROOT / p


def _candidates(parts) -> List[Path]:
    out = [COMMITTED.joinpath(*parts)]
    ext = external_root()
    if ext is not None:
        out.append(ext.joinpath(*parts))
    return out


def find_data(*parts: str) -> Optional[str]:
    """The path of the data file ``<name>/<...>`` (see the module), or None where it is not."""
    for c in _candidates(parts):
        if c.exists():
            return os.fspath(c)
    return None


def data_path(*parts: str) -> str:
    """The path of the data file ``<name>/<...>``; skips the test where it is missing (fails
    under SPARKXML_REQUIRE_DATA=1)."""
    if not parts:
        raise TypeError("data_path needs the data set's name and the file's path in it")
    found = find_data(*parts)
    if found is not None:
        return found
    rel = "/".join(parts)
    looked = ", ".join(os.fspath(c) for c in _candidates(parts))
    env = os.environ.get("SPARKXML_DATA")
    where = "SPARKXML_DATA is unset" if env is None else f"SPARKXML_DATA={env!r}"
    if os.environ.get("SPARKXML_REQUIRE_DATA") == "1":
        pytest.fail(f"SPARKXML_REQUIRE_DATA=1 and the data file {rel} is missing ({where}; "
                    f"looked for {looked})", pytrace=False)
    pytest.skip(f"data file {rel} not found: set SPARKXML_DATA to the folder holding "
                f"{parts[0]}/ (CI: ../shared/data) ({where}; looked for {looked})")
