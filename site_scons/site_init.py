# Read by SCons before the SConstruct. Nothing outside build/ is written: Python's bytecode
# cache of the project's own modules (site_scons, the zoo) goes to build/.pycache, since
# compiling them on every call would cost a no-op build about 0.1 s. Only those: a global
# sys.pycache_prefix would also hide the venv's own __pycache__ (numpy, onnx, onnxruntime)
# and recompile them into build/ on every cold build (about 1.3 s). The set-up (`./nnscons`'s
# bootstrap) compiles them once into the venv, as pip compiles what it installs: a build
# reads that bytecode while it matches its source and never writes there, so the first
# build after set-up does not spend ~0.3 s compiling 150 modules.
import atexit
import gc
import os
import sys
from importlib import machinery, util

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PREFIX = os.path.join(os.path.abspath("build"), ".pycache")
_VENV = os.path.join(_ROOT, ".venv")
_SETUP = os.path.join(sys.prefix, "nnscons-pycache")     # filled by ./nnscons's set-up


def _setup_pyc_fresh(source: str) -> bool:
    """Whether the set-up's bytecode of `source` is there and current: the header
    (PEP 552) holds this Python's magic number, flags 0 (timestamp-checked), and the source's
    mtime and size as the import system itself compares them."""
    saved = sys.pycache_prefix
    sys.pycache_prefix = _SETUP
    try:
        pyc = util.cache_from_source(source)
    finally:
        sys.pycache_prefix = saved
    try:
        with open(pyc, "rb") as f:
            head = f.read(16)
        st = os.stat(source)
    except OSError:
        return False
    return (len(head) == 16 and head[:4] == util.MAGIC_NUMBER and head[4:8] == bytes(4)
            and int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF)


class _ProjectLoader(machinery.SourceFileLoader):
    """SourceFileLoader whose bytecode cache lives under build/.pycache (or, read-only,
    the set-up's while it matches the source)."""

    def get_code(self, fullname):
        saved = sys.pycache_prefix
        # read by cache_from_source inside get_code; a fresh set-up pyc is read, not written
        sys.pycache_prefix = _SETUP if _setup_pyc_fresh(self.path) else _PREFIX
        try:
            return super().get_code(fullname)
        finally:
            sys.pycache_prefix = saved

    def set_data(self, path, data, *, _mode=0o666):
        if not path.startswith(_SETUP + os.sep):    # the set-up's bytecode is read-only here
            super().set_data(path, data, _mode=_mode)


def _project_finder(path):
    full = os.path.abspath(path or ".")
    if full != _ROOT and not full.startswith(_ROOT + os.sep) or full.startswith(_VENV + os.sep):
        raise ImportError("not a project folder")       # the next path hook takes it
    return machinery.FileFinder(path, (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
                                (_ProjectLoader, machinery.SOURCE_SUFFIXES),
                                (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES))


sys.dont_write_bytecode = False
sys.path_hooks.insert(0, _project_finder)
sys.path_importer_cache.clear()
# At exit CPython collects the garbage of every generation before it tears the modules down:
# after a ResNet-18 build that scan took 0.12-0.2 s (Zen 4). Objects frozen are skipped by
# it; the process ends right after, so nothing is kept that would be freed otherwise.
# Registered here, first, so that it runs after every later atexit handler.
atexit.register(gc.freeze)
