"""Packaging layout (metadata in pyproject.toml): the Python package lives in site_scons/
(where SCons finds it in a checkout); the kernels, templates and the built-in zoo are
installed inside it, where nnscons.resources looks for them.

`pip install <checkout>` writes nothing into the checkout: setuptools' build folders
(build/lib, build/bdist.*: the project's build/ belongs to nnscons's own builds) and its
.egg-info go to a temporary folder of this setup.py run, removed when it ends."""
import atexit
import shutil
import tempfile

from setuptools import find_packages, setup

_WORK = tempfile.mkdtemp(prefix="nnscons-setup-")
atexit.register(shutil.rmtree, _WORK, True)

DATA = {"nnscons._data.kernels": "kernels", "nnscons._data.templates": "templates"}
setup(
    packages=find_packages("site_scons", include=["nnscons", "nnscons.*"]) + ["nnscons.zoo"] + list(DATA),
    package_dir={"": "site_scons", "nnscons.zoo": "models/zoo", **DATA},
    package_data={"nnscons.builders": ["SConstruct"], **{p: ["**/*"] for p in DATA}},
    include_package_data=False,
    options={"build": {"build_base": _WORK + "/build"}, "egg_info": {"egg_base": _WORK}},
)
