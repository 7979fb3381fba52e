"""Where nnscons's own files are: kernels/, templates/ and the built-in zoo.

In a checkout they are at the repository's top (site_scons/nnscons/../../); in an installed
package (pip install), under nnscons/_data/ (kernels, templates) and nnscons/zoo (the zoo
package), as pyproject.toml maps them.  Paths are returned relative to the current
directory when they lie under it (the checkout's own builds: command lines and SCons
signatures then hold no absolute path), absolute otherwise (a foreign SConstruct).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_INSTALLED = os.path.isdir(os.path.join(PACKAGE_DIR, "_data"))
DATA_ROOT = (os.path.join(PACKAGE_DIR, "_data") if _INSTALLED
             else os.path.dirname(os.path.dirname(PACKAGE_DIR)))


def data_path(*parts: str) -> str:
    """A path under kernels/ or templates/ (e.g. data_path("kernels", "common"))."""
    path = os.path.join(DATA_ROOT, *parts)
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def data_relative(path: str) -> str:
    """A data_path() result as a path under the data root ("kernels/gap9/nn_gap9.c")."""
    return os.path.relpath(os.path.abspath(path), DATA_ROOT)


def zoo_dir() -> str:
    if _INSTALLED:
        return os.path.join(PACKAGE_DIR, "zoo")
    return os.path.join(DATA_ROOT, "models", "zoo")


def zoo():
    """The built-in zoo package (models/zoo in a checkout), imported as nnscons.zoo."""
    name = __package__ + ".zoo"
    if name in sys.modules:
        return sys.modules[name]
    if _INSTALLED:
        return importlib.import_module(name)
    init = os.path.join(zoo_dir(), "__init__.py")
    # the loader class that loaded this module: under ./nnscons it keeps bytecode in build/
    loader = type(__spec__.loader)(name, init)
    spec = importlib.util.spec_from_file_location(name, init, loader=loader,
                                                  submodule_search_locations=[zoo_dir()])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
