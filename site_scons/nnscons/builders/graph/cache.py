"""A shared build cache (cache=DIR or defaults.cache): SCons's CacheDir for everything
nnscons builds, generated sources, weights, goldens, objects, libraries, programs and the
run itself (run.log, output.npy: the emulators and simulators are deterministic).

Entries are keyed by SCons build signatures, which hold content signatures and command
lines relative to the project, never the checkout's absolute path: a second checkout, or
another machine sharing DIR, retrieves instead of building.  Every entry is pushed with a
SHA-256 of its bytes beside it (`<entry>.sha256`); an entry without its digest (being
published) or whose bytes do not match it (a truncated copy, a corrupted disk) is a miss,
never trusted and never deleted by a reader; the next build that stores it replaces it.
Entries and digests are published atomically (a temporary name in the cache, fsync, rename),
so builds sharing DIR at the same time, in one process or several, never see a part of a
file.  A DIR this process cannot write is used read-only.
"""
from __future__ import annotations

import os
import shutil
import threading

import SCons.CacheDir

from ...errors import UserError
from ...fileio import file_digest


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

    def _add_config(self, path: str) -> None:
        # Two builds pointed at one empty folder both find no config: the second's exclusive
        # create fails, and the first one's config is the same (only prefix_len): use it.
        try:
            super()._add_config(path)
        except FileExistsError:
            pass

    def is_readonly(self) -> bool:
        return self.readonly or super().is_readonly()

    def retrieve(self, node) -> bool:
        """A hit only when the entry's digest is there and matches its bytes.  An entry
        without its digest may be one another build is publishing, and one whose bytes do
        not match is damaged: both are misses, and neither is deleted here (another process
        may be reading or publishing it); the next store replaces a damaged one."""
        if not self.is_enabled():
            return False
        _, cachefile = self.cachepath(node)
        if cachefile and os.path.isfile(cachefile) and not self._intact(cachefile):
            self.CacheDebug("CacheRetrieve(%s): %s has no matching digest, a miss\n", node, cachefile)
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

    @staticmethod
    def _publish(data_path: str, dest: str) -> None:
        """dest := a copy of data_path, atomically (a temporary name beside it, fsync'd,
        renamed over dest): a reader sees the old file or the new one, never a part."""
        tmp = f"{dest}.tmp.{os.getpid()}.{threading.get_ident()}"
        try:
            with open(data_path, "rb") as src, open(tmp, "wb") as out:
                shutil.copyfileobj(src, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    @staticmethod
    def _write_digest(cachefile: str, digest: str) -> None:
        tmp = f"{cachefile}.sha256.{os.getpid()}.{threading.get_ident()}"
        try:
            with open(tmp, "w", encoding="ascii") as f:
                f.write(digest + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, cachefile + ".sha256")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def push(self, node):
        """Store node's file: SCons's copy (a temporary name, renamed into place) when the
        entry is new; when an entry is there but is not this build's bytes (damaged, or half
        of an earlier crash), this build's bytes replace it atomically; then the digest of
        this build's bytes, written atomically beside it."""
        if self.is_readonly() or not self.is_enabled():
            return None
        _, cachefile = self.cachepath(node)
        built = node.get_abspath()
        if not cachefile or node.nocache or not os.path.isfile(built):
            return super().push(node)
        ours = file_digest(built)
        try:
            if os.path.isfile(cachefile):
                if file_digest(cachefile) != ours:
                    self._publish(built, cachefile)
                result = None
            else:
                result = super().push(node)
            if os.path.isfile(cachefile) and not self._digest_is(cachefile, ours):
                self._write_digest(cachefile, ours)
        except OSError as e:      # a full disk or a vanished folder: the build stays correct
            self.CacheDebug("CachePush(%s): not stored (%s)\n", node, e)
            return None
        return result

    @staticmethod
    def _digest_is(cachefile: str, digest: str) -> bool:
        try:
            with open(cachefile + ".sha256", encoding="ascii") as f:
                return f.read().strip() == digest
        except OSError:
            return False


def enable(env, path: str) -> None:
    """Use `path` as the cache of env's nodes (created if missing and possible)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"cache={path}: not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(path) and not os.path.isdir(parent):
        # the cache folder itself is left to SCons, which creates it with its config in one
        # rename; an empty folder made here would make concurrent builds race to write config
        try:
            os.makedirs(parent)
        except OSError as e:
            raise UserError(f"cache={path}: cannot create the cache folder ({e.strerror})") from None
    env.CacheDir(os.path.abspath(path), VerifiedCacheDir)
