"""Writing build outputs safely.

Outputs are written to a temporary file and renamed into place, so an interrupted
build never leaves a half-written file, and a file whose bytes did not change keeps
its timestamp.
"""
from __future__ import annotations

import hashlib
import os
import tempfile


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_if_changed(path: str, data, executable: bool = False) -> bool:
    """Atomically write `data` (bytes or str); return True if the file changed.  The file
    gets the mode a plain open() would give (0644 under the usual umask; 0755 when
    executable), not mkstemp's 0600."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    except OSError:
        pass
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path)[-16:])
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, (0o777 if executable else 0o666) & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def file_digest(path: str) -> str:
    """sha256 hex digest of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
