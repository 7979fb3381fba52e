"""Finding mlir-aie, Peano and chess: MLIR_AIE_DIR / PEANO_INSTALL_DIR first, then PATH."""
from __future__ import annotations

import os
import shutil


def _which(name, env):
    return shutil.which(name, path=env.get("PATH", ""))


def _peano_dir(env):
    d = env.get("PEANO_INSTALL_DIR")
    if d:
        return d if os.path.isfile(os.path.join(d, "bin", "clang++")) else None
    clang = _which("clang++", env)
    if clang:   # a Peano install ships the aie2p runtime libraries next to its clang
        root = os.path.dirname(os.path.dirname(os.path.realpath(clang)))
        lib = os.path.join(root, "lib")
        if os.path.isdir(lib) and any(n.startswith("aie2p") for n in os.listdir(lib)):
            return root
    return None


def find_tools(env, opts) -> dict:
    """env: the environment variables (a mapping). Returns paths (None when absent) and a
    list `missing` of what to install or set, one clause each."""
    found, missing = {}, []
    mlir = env.get("MLIR_AIE_DIR")
    aiecc = os.path.join(mlir, "bin", "aiecc.py") if mlir else _which("aiecc.py", env)
    if aiecc and not os.path.isfile(aiecc):
        aiecc = None
    found["aiecc"] = aiecc
    found["mlir_aie_dir"] = os.path.dirname(os.path.dirname(aiecc)) if aiecc else None
    if not aiecc:
        missing.append("mlir-aie's aiecc.py (set MLIR_AIE_DIR to the mlir-aie install, e.g. "
                       "`source utils/env_setup.sh` of mlir-aie, or put aiecc.py on PATH)")
    peano = _peano_dir(env)
    found["peano_dir"] = peano
    found["chess"] = _which("xchesscc_wrapper", env)
    if opts["toolchain"]["kernel_compiler"] == "chess":
        if not found["chess"]:
            missing.append("xchesscc_wrapper on PATH (Vitis AIE tools with a chess licence), or "
                           "toolchain.kernel_compiler: peano")
    elif not peano:
        missing.append("Peano (llvm-aie): set PEANO_INSTALL_DIR to its install (bin/clang++), "
                       "e.g. the llvm-aie wheel's install folder")
    python = opts["toolchain"]["python"]
    found["python"] = python if os.path.isabs(python) and os.path.isfile(python) else _which(python, env)
    if not found["python"]:
        missing.append(f"a Python with mlir-aie's `aie` package and XRT's pyxrt "
                       f"(toolchain.python: {python} not found)")
    found["missing"] = missing
    return found
