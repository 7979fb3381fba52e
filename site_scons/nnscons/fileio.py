"""Writing build outputs safely.

Outputs are written to a temporary file and renamed into place, so an interrupted
build never leaves a half-written file, and a file whose bytes did not change keeps
its timestamp.
"""
from __future__ import annotations

import os
import tempfile


def write_if_changed(path: str, data) -> bool:
    """Atomically write `data` (bytes or str); return True if the file changed."""
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
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True
