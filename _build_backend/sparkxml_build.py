"""In-tree PEP 517 backend: setuptools', plus what ``setup.py``'s precompile needs in the build
environment when a wheel is built (numba compiles there; importing ``sparkxml_kernels`` needs
numpy and pyarrow). Editable installs and sdists get setuptools' requirements only: they never
precompile, so ``pip install -e`` (CI) downloads nothing more. ``SPARKXML_PRECOMPILE=0``
drops them for wheels too."""
import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 - every hook not overridden here

# the runtime's ranges (pyproject.toml's dependencies): the build's numba is the one pip
# installs beside the package, so the cache's numba version matches
PRECOMPILE_REQUIRES = ["numpy>=1.24", "numba>=0.60,<0.69", "pyarrow>=15"]


def get_requires_for_build_wheel(config_settings=None):
    extra = [] if os.environ.get("SPARKXML_PRECOMPILE", "1") == "0" else PRECOMPILE_REQUIRES
    return _setuptools.get_requires_for_build_wheel(config_settings) + extra
