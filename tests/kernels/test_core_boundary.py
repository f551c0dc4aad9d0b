"""The kernels package must work where pyspark cannot even be imported."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

BLOCKER = r"""
import sys
class _NoPyspark:
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError("pyspark is blocked in this test")
        return None
sys.meta_path.insert(0, _NoPyspark())
import pkgutil, importlib
import sparkxml_kernels
for m in pkgutil.walk_packages(sparkxml_kernels.__path__, "sparkxml_kernels."):
    importlib.import_module(m.name)
assert not any(k == "pyspark" or k.startswith("pyspark.") for k in sys.modules)
print("ok")
"""


def test_kernels_import_without_pyspark():
    out = subprocess.run([sys.executable, "-c", BLOCKER], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


def test_no_pyspark_import_in_kernel_sources():
    src = os.path.join(ROOT, "jvm-free-udfs")
    for dirpath, _, files in os.walk(src):
        for f in files:
            if f.endswith(".py"):
                text = open(os.path.join(dirpath, f)).read()
                assert "import pyspark" not in text and "from pyspark" not in text, f


def test_ci_runs_the_readme_test_command():
    readme = open(os.path.join(ROOT, "README.md")).read()
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.strip() for line in block.strip().splitlines() if line.strip()]
    assert len(commands) == 2, commands
    assert commands[1] in ci


def test_test_module_names_are_unique_across_folders():
    """The test folders are not packages: pytest imports each test file under its basename,
    so two files of one name in two folders fail to collect together."""
    seen = {}
    tests = os.path.join(ROOT, "tests")
    for folder in sorted(os.listdir(tests)):
        path = os.path.join(tests, folder)
        if not os.path.isdir(path):
            continue
        for f in os.listdir(path):
            if f.startswith("test_") and f.endswith(".py"):
                assert f not in seen, f"{folder}/{f} and {seen[f]}/{f}"
                seen[f] = folder
