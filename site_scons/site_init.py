# Read by SCons before the SConstruct. Nothing outside build/ is written: Python's bytecode
# cache of the project's own modules (site_scons, the zoo) goes to build/.pycache, since
# compiling them on every call would cost a no-op build about 0.1 s. Only those: a global
# sys.pycache_prefix would also hide the venv's own __pycache__ (numpy, onnx, onnxruntime)
# and recompile them into build/ on every cold build (about 1.3 s).
import os
import sys
from importlib import machinery

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PREFIX = os.path.join(os.path.abspath("build"), ".pycache")
_VENV = os.path.join(_ROOT, ".venv")


class _ProjectLoader(machinery.SourceFileLoader):
    """SourceFileLoader whose bytecode cache lives under build/.pycache."""

    def get_code(self, fullname):
        saved = sys.pycache_prefix
        sys.pycache_prefix = _PREFIX    # read by cache_from_source inside get_code
        try:
            return super().get_code(fullname)
        finally:
            sys.pycache_prefix = saved


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
