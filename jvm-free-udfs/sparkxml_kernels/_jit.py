"""The one door every numba kernel of ``sparkxml_kernels`` goes through: ``njit``.

Why a door of our own instead of ``numba.njit(cache=True)``:

- numba's on-disk cache lives in ``__pycache__`` beside each source file, and before numba 0.68
  it is stamped with the file's mtime and size. A wheel does not carry ``__pycache__``, and an
  install gives every file a new mtime, so a cache made at build time was never accepted.
- numba stamps a kernel's cache with its own file only: a kernel whose cached machine code
  inlined a kernel of another module kept the stale code after that module changed.

So every kernel here is cached in one directory (``cache_dir()``), stamped with a hash of the
*contents* of all of the package's ``.py`` files (``package_stamp()``): a copy of the package
with new mtimes, on a new path, accepts the cache; any change to any kernel source retires all
of it (numba then recompiles and rewrites entries as they are used). ``sparkxml_kernels.
precompile`` fills that directory for the signatures the estimators use; the build runs it so
an installed package carries a cache (see ``precompile``).

numba keys every entry by the Python and numba versions and by the target CPU (the LLVM
triple, CPU name and features: ``codegen.magic_tuple()``), so an entry compiled for the build
machine's CPU misses on any other CPU type. The build therefore compiles for a *portable*
target instead (``generic``: x86-64 with SSE2 only, or the architecture's baseline; see
``precompile``), and may add the x86-64 psABI levels ``x86-64-v2/v3/v4``
(``PORTABLE_TARGETS``). All targets' entries sit in the same index files, each under its own
key. When the entry for this process's CPU misses, ``_TieredCache`` loads the best portable
entry the host can run (its features include the level's: an AVX2 level is never loaded on a
CPU without AVX2) before it compiles anything. A kernel compiled here is saved under this
CPU's key, which later processes prefer. With no entry at all, or one made by another numba
or Python, the kernel is compiled as if there were no cache. Correctness never depends on
the cache.

Where the cache lives, first that applies:

1. ``$SPARKXML_NUMBA_CACHE_DIR``;
2. ``$NUMBA_CACHE_DIR/sparkxml_kernels`` (numba's own override, honoured for our kernels too);
3. ``<package>/_numba_cache`` when that directory is writable (a venv, an editable checkout);
4. ``<user cache dir>/sparkxml/numba-<stamp>`` (``$XDG_CACHE_HOME`` or ``~/.cache``), seeded
   once from the read-only ``<package>/_numba_cache`` the build shipped.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile

import numba
from numba.core import caching

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: saves are not serialised
    fcntl = None  # type: ignore[assignment]

# Portable targets, best first, per architecture (the LLVM triple's first part): the LLVM CPU
# name and the host features it needs (LLVM's names; the psABI levels' lists, those LLVM
# reports on x86-64 hosts). Entries for them are compiled with NUMBA_CPU_NAME=<name> and
# NUMBA_CPU_FEATURES="" (the name alone sets the ISA), so their key's features are "".
_X86_V2 = ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")
_X86_V3 = _X86_V2 + ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_X86_V4 = _X86_V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
PORTABLE_TARGETS = {
    "x86_64": (("x86-64-v4", _X86_V4), ("x86-64-v3", _X86_V3), ("x86-64-v2", _X86_V2),
               ("generic", ())),
}
GENERIC_TARGETS = (("generic", ()),)
# SPARKXML_PORTABLE_FALLBACK=0: never load another target's entry (precompile sets it while
# it compiles a target, which must write that target's entries, not load another's)
FALLBACK_ENV = "SPARKXML_PORTABLE_FALLBACK"

PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))
SHIPPED_CACHE = os.path.join(PACKAGE_DIR, "_numba_cache")
CACHE_ENV = "SPARKXML_NUMBA_CACHE_DIR"

# every dispatcher made through ``njit`` (tests check that no kernel bypasses this module)
KERNELS: list = []


@functools.lru_cache(maxsize=None)
def package_stamp() -> str:
    """sha256 of the package's ``.py`` files (relative path and bytes), in sorted order."""
    h = hashlib.sha256(numba.__version__.encode())
    paths = []
    for root, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "_numba_cache"))
        paths += [os.path.join(root, f) for f in files if f.endswith(".py")]
    for p in sorted(paths):
        h.update(os.path.relpath(p, PACKAGE_DIR).replace(os.sep, "/").encode() + b"\0")
        with open(p, "rb") as f:
            h.update(f.read())
        h.update(b"\0")
    return h.hexdigest()


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def _user_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sparkxml", "numba-" + package_stamp()[:16])


def _seed(target: str) -> None:
    """Copy the shipped cache files that ``target`` lacks (a read-only install's cache is
    read from its copy, where numba may also add entries)."""
    if not os.path.isdir(SHIPPED_CACHE):
        return
    for root, _, files in os.walk(SHIPPED_CACHE):
        out = os.path.join(target, os.path.relpath(root, SHIPPED_CACHE))
        os.makedirs(out, exist_ok=True)
        for f in files:
            if not os.path.exists(os.path.join(out, f)):
                tmp = os.path.join(out, f".{f}.{os.getpid()}.tmp")
                shutil.copyfile(os.path.join(root, f), tmp)
                os.replace(tmp, os.path.join(out, f))  # atomic: a concurrent reader sees all


@functools.lru_cache(maxsize=None)
def cache_dir() -> str:
    """The directory our kernels are cached in (resolved once a process; see the module
    docstring for the order)."""
    if os.environ.get(CACHE_ENV):
        return os.path.abspath(os.environ[CACHE_ENV])
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.path.join(os.path.abspath(os.environ["NUMBA_CACHE_DIR"]), "sparkxml_kernels")
    if _writable(SHIPPED_CACHE):
        return SHIPPED_CACHE
    user = _user_cache_dir()
    if _writable(user):
        _seed(user)
    return user


class ContentStampedLocator(caching._CacheLocator):
    """numba cache locator for this package's kernels (``None`` for any other function, so
    numba's own locators serve everyone else)."""

    def __init__(self, py_func, py_file):
        self._lineno = py_func.__code__.co_firstlineno
        sub = os.path.relpath(os.path.dirname(os.path.realpath(py_file)), PACKAGE_DIR)
        self._cache_path = os.path.join(cache_dir(), "_root" if sub == "." else
                                        sub.replace(os.sep, "_"))

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        _ensure(self._cache_path)

    def get_source_stamp(self):
        return package_stamp()

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        real = os.path.realpath(py_file)
        if not real.startswith(PACKAGE_DIR + os.sep) or not os.path.exists(real):
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:  # nowhere writable: numba's locators decide (or it runs uncached)
            return None
        return self


def _features(text: str) -> frozenset:
    """The enabled features of a feature string (``"+avx,-avx512f,..."``)."""
    return frozenset(f[1:] for f in text.split(",") if f.startswith("+"))


def portable_targets(triple: str) -> tuple:
    """``((cpu name, required features), ...)`` for an LLVM triple, best first."""
    return PORTABLE_TARGETS.get(triple.split("-", 1)[0], GENERIC_TARGETS)


def fallback_magics(magic: tuple) -> tuple:
    """The portable cache keys' target parts (``magic_tuple()`` values) that a process whose
    own codegen has ``magic`` may load, best first: the levels whose features its CPU has
    (as numba sees them: ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` included), its own left
    out; none when ``SPARKXML_PORTABLE_FALLBACK=0``."""
    return () if os.environ.get(FALLBACK_ENV, "1") == "0" else _fallback_magics(magic)


@functools.lru_cache(maxsize=None)
def _fallback_magics(magic: tuple) -> tuple:
    triple, _, features = magic
    have = _features(features)
    return tuple((triple, name, "") for name, need in portable_targets(triple)
                 if set(need) <= have and (triple, name, "") != magic)


class _MagicOnly:
    """What ``Cache._index_key`` reads of a codegen: its ``magic_tuple()``."""

    def __init__(self, magic):
        self._magic = magic

    def magic_tuple(self):
        return self._magic


def _runtime_ready(target_context) -> None:
    """What a kernel rebuilt from the cache needs of numba before it links: the runtime's
    symbols (NRT) and the hash secret's (a kernel that hashes)."""
    global _RUNTIME_READY
    if not _RUNTIME_READY:
        from numba.core.runtime import rtsys
        from numba.cpython import hashing  # noqa: F401  (registers the hash secret's symbols)

        rtsys.initialize(target_context)
        _RUNTIME_READY = True


_RUNTIME_READY = False


class _TieredCache(caching.FunctionCache):
    """numba's per-kernel cache, which on a miss for this CPU loads a portable entry (see the
    module docstring) before numba compiles."""

    def load_overload(self, sig, target_context):
        # numba refreshes the whole target context before every cache lookup, and the first
        # refresh of a process imports and installs every implementation numba has: ~0.5 s
        # of CPU, more than loading a family's ~50 cached kernels, in every new Python worker
        # (measured). Rebuilding a cached kernel needs none of it, only the symbols it links
        # against (_runtime_ready); parallel kernels start their thread pool themselves
        # (their reload hook). A miss compiles, and the compiler refreshes then.
        try:
            _runtime_ready(target_context)
        except Exception:  # a numba whose runtime differs: its own full refresh
            target_context.refresh()
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    def _load_overload(self, sig, target_context):
        data = super()._load_overload(sig, target_context)
        if data is not None or not self._enabled:
            return data
        for magic in fallback_magics(target_context.codegen().magic_tuple()):
            data = self._cache_file.load(self._index_key(sig, _MagicOnly(magic)))
            if data is not None:
                return self._impl.rebuild(target_context, data)
        return None

    def save_overload(self, sig, data):
        # numba names the new data file after the index it has just read: two processes
        # saving two signatures of one kernel at once (parallel test workers, Spark's Python
        # workers, precompile's pool) can both take ".1.nbc", and the index then points one
        # signature at the other's machine code. One saver at a time per kernel.
        index = getattr(self._cache_file, "_index_path", None)
        if fcntl is None or index is None:
            return super().save_overload(sig, data)
        try:
            fd = os.open(os.path.join(os.path.dirname(index),
                                      "." + os.path.basename(index) + ".lock"),
                         os.O_CREAT | os.O_RDWR, 0o666)
        except OSError:
            return super().save_overload(sig, data)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            super().save_overload(sig, data)
        finally:
            os.close(fd)  # releases the lock


@functools.lru_cache(maxsize=None)
def _ensure(path: str) -> None:
    if not _writable(path):
        raise OSError(f"numba cache directory {path} is not writable")


def _register() -> None:
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    if ContentStampedLocator not in impl._locator_classes:
        impl._locator_classes.insert(0, ContentStampedLocator)


_register()


def njit(*args, **options):
    """``numba.njit`` with ``cache=True`` (always: the cache is what ``precompile`` ships) and
    ``nogil=True`` by default; every kernel of this package is made with it. Takes
    numba's options (``parallel``, ``inline``, ``error_model``, ...)."""
    if options.get("cache") is False:
        raise ValueError("sparkxml_kernels kernels are always cached (cache=False given)")
    options["cache"] = True
    options.setdefault("nogil", True)
    if args and callable(args[0]):  # bare @njit
        return _made(numba.njit(**options)(args[0]))

    def wrap(fn):
        return _made(numba.njit(*args, **options)(fn))
    return wrap


def _made(d):
    # same locator and files as numba's FunctionCache; only the lookup on a miss differs
    if type(d._cache) is caching.FunctionCache:
        d._cache = _TieredCache(d.py_func)
    KERNELS.append(d)
    return d
