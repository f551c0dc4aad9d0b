"""The serving-only distribution (jvm-free-udfs/pyproject.toml): its wheel holds every kernels
module, depends on numpy/numba/pyarrow/scipy only, and serves a saved model where pyspark
cannot be imported."""
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
KERNELS = os.path.join(ROOT, "jvm-free-udfs")

SERVE = """
import sys
sys.modules["pyspark"] = None                  # any pyspark import now fails
import numpy as np
import sparkxml_kernels
from sparkxml_kernels.gbt.predictor import TreeEnsemblePredictor
from sparkxml_kernels.persist import metadata_json, save_directory
assert sparkxml_kernels.__file__.startswith(sys.argv[1]), sparkxml_kernels.__file__
stump = TreeEnsemblePredictor(feature=[0, -1, -1], threshold=[1.0, 0, 0], default_left=[0, 0, 0],
                              left=[1, -1, -1], right=[2, -1, -1], value=[0, -1.0, 1.0],
                              gain=[1, 0, 0], cover=[2, 1, 1], tree_offsets=[0, 3],
                              n_outputs=1, base_score=[0.5], objective="squared_error",
                              n_features=1)
path = sys.argv[2]
save_directory(path, metadata_json("sparkxml.gbt.GBTRegressionModel", "u", {}, {}, "gbt"),
               stump.to_arrays(), overwrite=False)
got = sparkxml_kernels.load_model(path).predict(np.array([[0.0], [2.0], [np.nan]]))
assert np.allclose(got, [-0.5, 1.5, 1.5]), got
print("served", got.tolist())
"""


def test_serving_wheel_without_pyspark(tmp_path):
    wheels = tmp_path / "wheels"
    # build from a clean copy: setuptools builds in place and would leave build/ behind
    src_copy = tmp_path / "src"
    shutil.copytree(KERNELS, src_copy, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "*.nbi", "*.nbc", "_numba_cache"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                        str(wheels), str(src_copy)],
                       capture_output=True, text=True)
    if r.returncode != 0 and "No module named pip" in r.stderr:
        pytest.skip("pip is not available in this interpreter")
    assert r.returncode == 0, r.stderr
    (whl,) = wheels.glob("sparkxml_kernels-*.whl")
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        meta = next(z.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
        z.extractall(tmp_path / "site")
    src = os.path.join(KERNELS, "sparkxml_kernels")
    want = {os.path.relpath(os.path.join(d, f), KERNELS).replace(os.sep, "/")
            for d, _, files in os.walk(src) for f in files
            if f.endswith(".py") or f == "_warm_signatures.txt"}
    assert want <= names, sorted(want - names)
    requires = [line.split(":", 1)[1].strip().lower() for line in meta.splitlines()
                if line.startswith("Requires-Dist:")]
    assert {q.split(">")[0].split("<")[0].split("=")[0].strip() for q in requires} == \
        {"numpy", "scipy", "pyarrow", "numba"}
    out = subprocess.run([sys.executable, "-c", SERVE, str(tmp_path / "site"),
                          str(tmp_path / "model")], cwd=tmp_path, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(tmp_path / "site")))
    assert out.returncode == 0, out.stderr
    assert "served [-0.5, 1.5, 1.5]" in out.stdout
