"""Packaging layout (metadata in pyproject.toml): the Python package lives in site_scons/
(where SCons finds it in a checkout); the kernels, templates and the built-in zoo are
installed inside it, where nnscons.resources looks for them."""
from setuptools import find_packages, setup

DATA = {"nnscons._data.kernels": "kernels", "nnscons._data.templates": "templates"}
setup(
    packages=find_packages("site_scons", include=["nnscons", "nnscons.*"]) + ["nnscons.zoo"] + list(DATA),
    package_dir={"": "site_scons", "nnscons.zoo": "models/zoo", **DATA},
    package_data={"nnscons.builders": ["SConstruct"], **{p: ["**/*"] for p in DATA}},
    include_package_data=False,
)
