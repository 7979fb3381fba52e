"""The set-up's bytecode (site_scons/precompile.py, run by ./nnscons's bootstrap): a build reads
the project's modules from it while they match their source, compiles a module edited since into
build/.pycache, and never writes into the venv."""
import os
import shutil
import subprocess
import sys

import pytest

PRECOMPILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "site_scons", "precompile.py")


def _pycs(folder):
    """{path: bytes} of every .pyc under folder."""
    out = {}
    for dirpath, _, files in os.walk(folder):
        for f in files:
            if f.endswith(".pyc"):
                with open(os.path.join(dirpath, f), "rb") as fh:
                    out[os.path.join(dirpath, f)] = fh.read()
    return out


@pytest.fixture
def set_up(project):
    """The project copy after the set-up's compile step; its bytecode removed from the venv
    afterwards (its paths name the copy)."""
    mine = os.path.join(sys.prefix, "nnscons-pycache", os.path.abspath(project.path).lstrip(os.sep))
    subprocess.run([sys.executable, PRECOMPILE, project.path], check=True, stdout=subprocess.DEVNULL)
    yield project, mine
    shutil.rmtree(mine, ignore_errors=True)


def test_a_build_reads_the_setup_bytecode_and_writes_only_what_changed_into_build(set_up):
    project, mine = set_up
    setup_pycs = _pycs(mine)
    tag = sys.implementation.cache_tag
    assert any(p.endswith(os.path.join("nnscons", f"fileio.{tag}.pyc")) for p in setup_pycs)
    project.scons("model=simplecnn", "codegen")
    # every module the build imported was current in the set-up's bytecode: none compiled
    assert _pycs(project.file("build/.pycache")) == {}
    # a module edited since the set-up: compiled into build/.pycache, the venv's left as it was
    path = project.file("site_scons/nnscons/fileio.py")
    with open(path, "a") as f:
        f.write("# edited after the set-up\n")
    project.scons("model=simplecnn", "codegen")
    compiled = [os.path.basename(p) for p in _pycs(project.file("build/.pycache"))]
    assert compiled == [f"fileio.{tag}.pyc"]
    assert _pycs(mine) == setup_pycs
