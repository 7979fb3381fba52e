"""Shared fixtures: import paths, and a scratch copy of the project to run scons in."""
from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (os.path.join(ROOT, "site_scons"), ROOT):
    if p not in sys.path:
        sys.path.insert(0, p)

SCONS = os.path.join(os.path.dirname(sys.executable), "scons")
# GVSoC's GAP9 model (GAP9_GVSOC, set by .ci/run) makes gap9's platform=auto choose it: the
# suite's gap9 builds say their platform or run on the emulation; the tests of the model
# (test_gap9_model.py) hand it to their builds themselves.
# The xdist workers start after this module ran in the controller and inherit its environment:
# the value stays reachable to them under a name no build reads.
GAP9_MODEL = os.environ.pop("GAP9_GVSOC", None) or os.environ.get("NNSCONS_TESTS_GAP9_GVSOC")
if GAP9_MODEL:
    os.environ["NNSCONS_TESTS_GAP9_GVSOC"] = GAP9_MODEL
_SKIP = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".pytest_cache")



def kernel_library(tmp_path_factory, name: str, sources: list, folders: list, flags=()):
    """ctypes.CDLL of kernels/ sources built as one shared library (a kernel tested on its
    own); skips when the machine has no C compiler."""
    import ctypes
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc) on PATH")
    so = str(tmp_path_factory.mktemp(name) / f"{name}.so")
    includes = [a for f in folders for a in ("-I", f)]
    subprocess.run([cc, "-O2", *flags, "-shared", "-fPIC", *includes, *sources, "-o", so, "-lm"], check=True)
    return ctypes.CDLL(so)

def _ignore(directory, names):
    skipped = set(_SKIP(directory, names))
    if os.path.abspath(directory) == ROOT and "build" in names:
        skipped.add("build")  # only the top-level build/: site_scons/nnscons/builders is code
    return skipped
_STEP = re.compile(r"^([A-Z][A-Z0-9_]*) (.+) \[[^\]]+\]$")  # VERB label [target]


class Project:
    """A copy of the project in a temporary folder; scons runs there."""

    def __init__(self, path):
        self.path = str(path)

    def scons(self, *args, check=True, timeout=900, env=None):
        env = dict(os.environ if env is None else env, PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.run([SCONS, "-Q", *args], cwd=self.path, env=env, timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"scons {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        return proc

    def file(self, rel):
        return os.path.join(self.path, rel)

    def read(self, rel, mode="r"):
        with open(self.file(rel), mode) as f:
            return f.read()

    def write(self, rel, data):
        path = self.file(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)

    def build_outputs(self):
        """{path under build/: bytes} of what a build made, without SCons's and nnscons's own
        bookkeeping (signatures, locks, caches, bytecode, the no-op record, the zoo cache)."""
        out = {}
        root = self.file("build")
        for dirpath, _, files in os.walk(root):
            for f in files:
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                if os.path.basename(rel).startswith((".sconsign", ".lock")) or "compile_commands.json" in rel \
                        or "/cache/" in rel or rel.startswith((".pycache", ".noop", ".zoo")):
                    continue
                with open(os.path.join(dirpath, f), "rb") as fh:
                    out[rel] = fh.read()
        return out

    def snapshot(self):
        """{relative path: bytes} of every file outside build/."""
        out = {}
        for dirpath, dirnames, files in os.walk(self.path):
            rel = os.path.relpath(dirpath, self.path)
            if rel == "build" or rel.startswith("build" + os.sep):
                continue
            for f in files:
                p = os.path.join(dirpath, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, self.path)] = fh.read()
        return out


def as_unprivileged_user(project):
    """argv prefix running a command as an unprivileged user, so that read-only folders
    really are (root ignores permission bits); [] when not root. The project moves to a
    folder of its own under /tmp that the user can reach: pytest keeps its temporary root
    0700, and a concurrent pytest session resets it while a test runs."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot make build/ read-only for the build")
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if subprocess.run(prefix + [sys.executable, "-c", "import SCons"], capture_output=True).returncode:
        pytest.skip(f"running as root, and {sys.executable} is not usable by an unprivileged user")
    home = tempfile.mkdtemp(prefix="nns-unprivileged-")
    atexit.register(shutil.rmtree, home, True)
    os.chmod(home, 0o755)
    moved = os.path.join(home, os.path.basename(project.path))
    shutil.move(project.path, moved)
    project.path = moved
    for dirpath, dirnames, files in os.walk(project.path):   # the copy readable by nobody
        os.chmod(dirpath, 0o755)
        for f in files:
            p = os.path.join(dirpath, f)
            os.chmod(p, os.stat(p).st_mode | 0o444)
    return prefix


def adhoc(project, target: str, stem: str) -> str:
    """build/<target>/<folder> of a model given as a path (its own folder: file-<stem>-<hash>)."""
    import glob
    found = glob.glob(os.path.join(project.path, "build", target, f"file-{stem}-*"))
    assert len(found) == 1, found
    return os.path.relpath(found[0], project.path)


def steps(stdout: str) -> list:
    """The progress lines of a build as ['CODEGEN conv1', ...], in order."""
    return [f"{m.group(1)} {m.group(2)}" for m in map(_STEP.match, stdout.splitlines()) if m]


@pytest.fixture
def project(tmp_path):
    dst = tmp_path / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    return Project(dst)


class _Prebuilt:
    """One cold build per scons command line and session (per xdist worker), kept in a
    project copy of its own that no test edits."""

    def __init__(self, root):
        self.root = root
        self.built = {}

    def get(self, args):
        if args not in self.built:
            origin = Project(self.root / f"b{len(self.built)}" / "proj")
            shutil.copytree(ROOT, origin.path, ignore=_ignore)
            try:
                self.built[args] = (origin, origin.scons(*args))
            except AssertionError as e:    # failed: every test that needs it fails with it
                self.built[args] = e
        if isinstance(self.built[args], AssertionError):
            raise AssertionError(f"the shared first build failed: {self.built[args]}")
        return self.built[args]


@pytest.fixture(scope="session")
def _prebuilt(tmp_path_factory):
    return _Prebuilt(tmp_path_factory.mktemp("prebuilt"))


@pytest.fixture
def prebuilt(tmp_path, _prebuilt):
    """prebuilt(*scons_args) -> (project, first): a fresh copy of the project in which
    `scons *scons_args` already ran (and passed), and that first build's CompletedProcess.
    The cold build runs once per session, not once per test: the copy keeps its files'
    mtimes, so SCons finds it up to date (only the no-op record, keyed by the folder, misses
    and takes the full path once). For tests whose subject starts after a first build: the
    edits, damage and rebuilds that follow. A test about the cold build itself (its
    environment, umask, -j) builds in `project`."""
    def make(*args):
        origin, first = _prebuilt.get(tuple(args))
        dst = tmp_path / "proj"
        shutil.copytree(origin.path, dst, symlinks=True)
        copy = Project(dst)
        copy.origin = origin.path     # where the files were built (for "no build path inside")
        return copy, first
    return make


# NNSCONS_TEST_TIMES=FILE: one JSON line per test (setup + call + teardown) with its wall time
# and its CPU time, the worker's own and its finished subprocesses' (compilers, scons, qemu):
# the CPU figure barely moves when the machine is shared, the wall time does. What a `slow`
# mark is decided on (README, "Tests and benchmarks").
_TIMES = os.environ.get("NNSCONS_TEST_TIMES")
if _TIMES:
    import json
    import resource
    import time

    def _cpu_seconds():
        own, done = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + done.ru_utime + done.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        wall, cpu = time.monotonic(), _cpu_seconds()
        yield
        line = {"test": item.nodeid, "wall": round(time.monotonic() - wall, 2),
                "cpu": round(_cpu_seconds() - cpu, 2), "slow": item.get_closest_marker("slow") is not None}
        with open(_TIMES, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


def pytest_collection_modifyitems(items):
    """Slow cases first: with two workers, a long case started last would run alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
