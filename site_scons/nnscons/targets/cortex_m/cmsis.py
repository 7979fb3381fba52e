"""Where CMSIS-NN and the CMSIS Core headers come from, and which of CMSIS-NN's sources a
firmware compiles.

$CMSIS_NN (a CMSIS-NN checkout: Include/, Source/) and $CMSIS_CORE (CMSIS_6's
CMSIS/Core/Include) name a user's own copies; otherwise the archives in ../shared/cmsis
beside the project are unpacked once into build/tools/cmsis (nothing outside build/ is
written; one rename publishes an unpack, so an interrupted one is never used).
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import tarfile
import tempfile

from ...errors import UserError

LOCAL = os.path.join("build", "tools", "cmsis")
ARCHIVES = {"nn": ("cmsis-nn-*.tar.xz", "CMSIS-NN"), "core": ("cmsis6-core-*.tar.xz", "CMSIS_6")}
# the int8 kernels the generated layers call and what they call in turn (the linker's
# --gc-sections drops what a network does not use)
SOURCE_DIRS = ("ConvolutionFunctions", "FullyConnectedFunctions", "NNSupportFunctions",
               "BasicMathFunctions", "PoolingFunctions", "TransposeFunctions")


def _shared() -> str:
    return os.path.join(os.path.dirname(os.getcwd()), "shared", "cmsis")


def _unpack(which: str) -> str | None:
    pattern, top = ARCHIVES[which]
    dest = os.path.join(LOCAL, top)
    if os.path.isdir(dest):
        return dest
    found = sorted(glob.glob(os.path.join(_shared(), pattern)))
    if not found:
        return None
    os.makedirs(LOCAL, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=top + ".", dir=LOCAL)
    with tarfile.open(found[-1]) as tar:
        tar.extractall(tmp, filter="data")
    try:
        os.rename(os.path.join(tmp, top), dest)
    except OSError:             # another build unpacked it first
        pass
    shutil.rmtree(tmp, ignore_errors=True)
    return dest if os.path.isdir(dest) else None


def locate() -> dict:
    """{"nn": CMSIS-NN folder, "core": CMSIS Core include folder}, or a UserError naming
    what to set."""
    nn = os.environ.get("CMSIS_NN") or _unpack("nn")
    core = os.environ.get("CMSIS_CORE")
    if not core:
        top = _unpack("core")
        core = os.path.join(top, "CMSIS", "Core", "Include") if top else None
    if not nn or not os.path.isfile(os.path.join(nn, "Include", "arm_nnfunctions.h")):
        raise UserError("target kind 'cortex-m' needs CMSIS-NN: set CMSIS_NN to a CMSIS-NN checkout "
                        "(the folder with Include/arm_nnfunctions.h), or put shared/cmsis/cmsis-nn-*.tar.xz "
                        f"beside the project (looked in {_shared()})")
    if not core or not os.path.isfile(os.path.join(core, "cmsis_compiler.h")):
        raise UserError("target kind 'cortex-m' needs the CMSIS Core headers: set CMSIS_CORE to CMSIS_6's "
                        "CMSIS/Core/Include (the folder with cmsis_compiler.h), or put "
                        f"shared/cmsis/cmsis6-core-*.tar.xz beside the project (looked in {_shared()})")
    return {"nn": os.path.abspath(nn), "core": os.path.abspath(core)}


_SKIP = re.compile(r"_(f16|f32|s4)(_|\.)|lstm")   # float, 4-bit and LSTM kernels: never called


def sources(nn: str) -> list:
    """CMSIS-NN's int8 sources (s8 and the support code), sorted."""
    out = []
    for d in SOURCE_DIRS:
        for path in sorted(glob.glob(os.path.join(nn, "Source", d, "*.c"))):
            if not _SKIP.search(os.path.basename(path)):
                out.append(path)
    return out


def include_dirs(where: dict) -> list:
    return [os.path.join(where["nn"], "Include"), where["core"]]


_DEFINED = re.compile(r"^[A-Za-z_][\w \t\*]*?\b(arm_\w+)\s*\(", re.M)     # a definition at a line's start
_CALLED = re.compile(r"\b(arm_\w+)\s*\(")


def used_sources(nn: str, entries) -> list:
    """The CMSIS-NN sources a network's calls need: the files defining the entry functions
    and, followed through their bodies, every arm_* function they call (text-level: each
    source file's definitions and calls), sorted."""
    defined, calls = {}, {}
    for path in sources(nn):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name in _DEFINED.findall(text):
            defined.setdefault(name, path)
        calls[path] = set(_CALLED.findall(text))
    todo = [defined[e] for e in entries if e in defined]
    used = set()
    while todo:
        path = todo.pop()
        if path in used:
            continue
        used.add(path)
        todo += [defined[c] for c in calls[path] if c in defined and defined[c] not in used]
    return sorted(used)


def vendored(where: dict, entries) -> dict:
    """What a standalone export carries of CMSIS: {"files": [(path, name in the export)],
    "dirs": {include folder: its name in the export}}: the used sources, CMSIS-NN's and
    CMSIS Core's headers, and both licenses."""
    nn, core = where["nn"], where["core"]
    files = [(p, "cmsis-nn/" + os.path.relpath(p, nn)) for p in used_sources(nn, entries)]
    files += [(p, "cmsis-nn/" + os.path.relpath(p, nn))
              for p in sorted(glob.glob(os.path.join(nn, "Include", "**", "*.h"), recursive=True))]
    files += [(p, "cmsis-core/Include/" + os.path.relpath(p, core))
              for p in sorted(glob.glob(os.path.join(core, "**", "*.h"), recursive=True))]
    for lic, name in ((os.path.join(nn, "LICENSE"), "cmsis-nn/LICENSE"),
                      (os.path.join(core, "..", "..", "..", "LICENSE"), "cmsis-core/LICENSE")):
        if os.path.isfile(lic):
            files.append((os.path.normpath(lic), name))
    return {"files": files, "dirs": {os.path.join(nn, "Include"): "cmsis-nn/Include", core: "cmsis-core/Include"}}
