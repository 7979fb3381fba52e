"""A shared build cache (cache=DIR or defaults.cache): SCons's CacheDir for everything
nnscons builds, generated sources, weights, goldens, objects, libraries, programs and the
run itself (run.log, output.npy: the emulators and simulators are deterministic).

Entries are keyed by SCons build signatures, which hold content signatures and command
lines relative to the project, never the checkout's absolute path: a second checkout, or
another machine sharing DIR, retrieves instead of building.  Every entry is pushed with a
SHA-256 of its bytes beside it (`<entry>.sha256`); an entry whose bytes do not match (a
truncated copy, a corrupted disk) is a miss, never trusted, and is rebuilt.  A DIR this
process cannot write is used read-only.
"""
from __future__ import annotations

import os

import SCons.CacheDir

from ..errors import UserError
from ..fileio import file_digest


def _writable(path: str) -> bool:
    """Whether files can really be created in path (root ignores permission bits, and a
    read-only mount refuses anyway: try it)."""
    try:
        fd = os.open(os.path.join(path, f".probe-{os.getpid()}"), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
    except OSError:
        return False
    os.close(fd)
    os.unlink(os.path.join(path, f".probe-{os.getpid()}"))
    return True


class VerifiedCacheDir(SCons.CacheDir.CacheDir):
    """CacheDir whose entries carry their SHA-256; a mismatch is a miss."""

    def __init__(self, path) -> None:
        self.readonly = os.path.isdir(path) and not _writable(path)
        super().__init__(path)

    def _readconfig(self, path: str) -> None:
        if not self.readonly:
            return super()._readconfig(path)
        # SCons locks the config for reading with a lock file next to it: impossible here
        import json
        try:
            with open(os.path.join(path, "config"), encoding="utf-8") as f:
                self.config = json.load(f)
        except (OSError, ValueError):
            self.config = {"prefix_len": SCons.CacheDir.CACHE_PREFIX_LEN}

    def is_readonly(self) -> bool:
        return self.readonly or super().is_readonly()

    def retrieve(self, node) -> bool:
        if not self.is_enabled():
            return False
        _, cachefile = self.cachepath(node)
        if cachefile and os.path.isfile(cachefile) and not self._intact(cachefile):
            self.CacheDebug("CacheRetrieve(%s): %s is corrupt, rebuilding\n", node, cachefile)
            if not self.readonly:
                for p in (cachefile, cachefile + ".sha256"):
                    try:
                        os.unlink(p)
                    except OSError:
                        pass
            return False
        return super().retrieve(node)

    @staticmethod
    def _intact(cachefile: str) -> bool:
        try:
            with open(cachefile + ".sha256", encoding="ascii") as f:
                want = f.read().strip()
            return want == file_digest(cachefile)
        except OSError:
            return False

    def push(self, node):
        if self.is_readonly():
            return None
        result = super().push(node)
        _, cachefile = self.cachepath(node)
        if cachefile and os.path.isfile(cachefile) and not os.path.isfile(cachefile + ".sha256"):
            tmp = f"{cachefile}.sha256.{os.getpid()}"
            with open(tmp, "w", encoding="ascii") as f:
                f.write(file_digest(cachefile) + "\n")
            os.replace(tmp, cachefile + ".sha256")
        return result


def enable(env, path: str) -> None:
    """Use `path` as the cache of env's nodes (created if missing and possible)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"cache={path}: not a directory")
    if not os.path.isdir(path):
        try:
            os.makedirs(path)
        except OSError as e:
            raise UserError(f"cache={path}: cannot create the cache folder ({e.strerror})") from None
    env.CacheDir(os.path.abspath(path), VerifiedCacheDir)
