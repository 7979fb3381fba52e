"""The build folder as a shared workspace: writable, locked per target, left clean.

Everything nnscons writes lives under build/<target>/.  Each target folder has its own
SCons signature database and its own lock, so builds of different targets never disturb
each other and a second build of the same target waits instead of corrupting the first.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile

from ...errors import UserError
from .paths import path_component

BUILD = "build"


def target_dir(target_name: str) -> str:
    """build/<target>, created and proven writable (a clear error otherwise)."""
    path = os.path.join(BUILD, path_component(target_name))
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UserError(f"cannot write to {path}/: {e.strerror}. nnscons writes every output under "
                        f"{BUILD}/; make it writable (chmod -R u+w {BUILD}) or remove it") from None
    return path


def lock(path: str, target_name: str):
    """Hold build/<target>/.lock for this process (released when it exits)."""
    fh = open(os.path.join(path, ".lock"), "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.stderr.write(f"nnscons: another build of target '{target_name}' is running in this "
                         f"folder; waiting for it to finish ...\n")
        fcntl.flock(fh, fcntl.LOCK_EX)
    return fh


@contextlib.contextmanager
def cleanup_on_error(target_path: str):
    """Remove the folders a failed planning created under build/<target>/ (empty ones only)."""
    before = set()
    for dirpath, dirnames, _ in os.walk(target_path):
        before.update(os.path.join(dirpath, d) for d in dirnames)
    try:
        yield
    except UserError:
        created = []
        for dirpath, dirnames, _ in os.walk(target_path):
            created += [os.path.join(dirpath, d) for d in dirnames
                        if os.path.join(dirpath, d) not in before]
        for d in sorted(created, key=len, reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(d)                 # only if empty
        raise


class SignatureRouter:
    """The `dbm module` given to SConsignFile: one SCons signature database per target
    folder (build/<target>/.sconsign.dblite), so builds of different targets, and matrix
    builds over several, never share a file, and nothing is written outside build/.
    Entries of directories outside build/ (sources: kernels, templates, the package) are
    kept in memory only: with content signatures SCons reads those files anyway."""

    def __init__(self) -> None:
        self._dbs, self._memory = {}, {}

    # the module interface SConsignFile wants
    def open(self, name, mode="c"):          # noqa: A003 - dbm's name
        return self

    def _db(self, key: str):
        parts = key.replace("\\", "/").split("/")
        if len(parts) < 2 or parts[0] != BUILD:
            return None
        folder = os.path.join(BUILD, parts[1])
        if folder not in self._dbs:
            import SCons.dblite
            os.makedirs(folder, exist_ok=True)
            self._dbs[folder] = SCons.dblite.open(os.path.join(folder, ".sconsign"), "c")
        return self._dbs[folder]

    def __getitem__(self, key):
        db = self._db(key)
        return self._memory[key] if db is None else db[key]

    def __setitem__(self, key, value) -> None:
        db = self._db(key)
        if db is None:
            self._memory[key] = value
        else:
            db[key] = value

    def __contains__(self, key) -> bool:
        db = self._db(key)
        return key in self._memory if db is None else key in db

    def keys(self):
        return list(self._memory) + [k for db in self._dbs.values() for k in db.keys()]

    def sync(self) -> None:
        for db in self._dbs.values():
            db.sync()

    def close(self) -> None:
        for db in self._dbs.values():
            db.close()
        self._dbs = {}


def prune(build_dir: str, subdirs, declared) -> list:
    """Delete files under build_dir/<subdir> that no declared node produces (files of
    layers that no longer exist, of an earlier model in the same folder).  Returns them."""
    keep = {os.path.normpath(p) for p in declared}
    removed = []
    for sub in subdirs:
        for dirpath, _, files in os.walk(os.path.join(build_dir, sub)):
            for f in files:
                if f.startswith(".sconsign"):         # SCons's own per-directory signatures
                    continue
                path = os.path.normpath(os.path.join(dirpath, f))
                if path not in keep:
                    os.unlink(path)
                    removed.append(path)
    return sorted(removed)
