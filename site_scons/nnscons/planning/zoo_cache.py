"""Zoo models generated once per content, not once per build folder and step.

Generating a zoo network (its random weights, then the ONNX serialization) costs about
0.3 s for resnet18, and a cold build needed it twice (the planning imports the model, then
the MODEL step writes it), once more per target.  The bytes are a pure function of the
generator's code and arguments, so they are kept under build/.zoo/<key>.<ext> with the
SHA-256 of their bytes beside them (<entry>.sha256); every build folder's model file is a
copy.  Both files are published atomically (write_if_changed); an entry whose bytes do
not match its digest (damaged, edited) is generated again, never copied.  Only under
build/: a foreign SConstruct's build folder keeps its entries in <folder>/cache/.
The call that generates a model also hands its proto to the caller (materialize), so that
the planning does not parse back the file it has just written.
"""
from __future__ import annotations

import glob
import os
import shutil
import tempfile

from ..fileio import file_digest, write_if_changed
from ..resources import zoo, zoo_dir
from .keys import digest

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_digest(patterns) -> str:
    """The digest of the files the glob patterns match (names relative to the package)."""
    files = sorted(f for p in patterns for f in glob.glob(p, recursive=True))
    return digest([os.path.relpath(f, _PKG) for f in files], *[file_digest(f) for f in files])


def zoo_code_digest() -> str:
    """The zoo generators' code: a change regenerates every zoo model."""
    return code_digest([os.path.join(zoo_dir(), "*.py")])


def cache_dir(model_dir: str) -> str:
    """build/.zoo for nnscons's own build/<target>/<model> folders, else the folder's cache/."""
    parts = os.path.normpath(model_dir).split(os.sep)
    if len(parts) == 3 and parts[0] == "build":
        return os.path.join("build", ".zoo")
    return os.path.join(model_dir, "cache")


def entry_path(name: str, seed, input_shape, model_dir: str) -> str:
    """The cache entry of these generator arguments (its digest is beside it: + .sha256)."""
    ext = os.path.splitext(zoo().model_file(name))[1]
    key = digest("zoo-file", name, seed, list(input_shape or []), zoo_code_digest())
    return os.path.join(cache_dir(model_dir), f"{name}-{key}{ext}")


def _intact(entry: str):
    """The entry's digest when the entry is there and its bytes match it, else None."""
    try:
        with open(entry + ".sha256", encoding="ascii") as f:
            want = f.read().strip()
        return want if file_digest(entry) == want else None
    except OSError:
        return None


def _copy(src: str, path: str) -> None:
    """path := a copy of src, atomically (a reader never sees part of it)."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path)[-16:])
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write(name: str, seed, input_shape, path: str) -> bool:
    """Write zoo model `name` to path unless path holds its bytes already; generated only
    when no intact cache entry has them.  Returns True if path was (re)written."""
    return materialize(name, seed, input_shape, path)[0]


def materialize(name: str, seed, input_shape, path: str):
    """write(), and (path (re)written, the onnx.ModelProto whose bytes path holds when this
    call generated it, else None): the planning imports that model without parsing the
    47 MB it just wrote (resnet18) back."""
    import hashlib
    entry = entry_path(name, seed, input_shape, os.path.dirname(path))
    have = _intact(entry)
    if have is None:
        model = zoo().build(name, seed, input_shape)
        data = model if isinstance(model, bytes) else model.SerializeToString(deterministic=True)
        have = hashlib.sha256(data).hexdigest()
        write_if_changed(entry, data)
        write_if_changed(entry + ".sha256", have + "\n")
        proto = None if isinstance(model, bytes) else model
        if os.path.isfile(path) and file_digest(path) == have:
            return False, proto
        return write_if_changed(path, data), proto
    if os.path.isfile(path) and file_digest(path) == have:
        return False, None
    _copy(entry, path)
    return True, None
