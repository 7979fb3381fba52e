"""Where platform=board finds the Kendryte standalone SDK and the RISC-V toolchain.

The SDK: targets.<t>.toolchain.sdk, else $KENDRYTE_SDK (a user's own unpacked SDK), else the
public SDK tarball beside the project (../shared/kendryte/kendryte-standalone-sdk-*.tar.xz),
unpacked by an SCons node into build/<target>/sdk/ (nothing outside build/ is written).
The toolchain: $KENDRYTE_TOOLCHAIN (the folder of riscv64-unknown-elf-gcc), else the Kendryte
toolchain at /opt/kendryte-toolchain/bin, else Debian's riscv64-unknown-elf-gcc on PATH, which
has no newlib: the build then adds the project's picolibc compatibility layer
(kernels/k210/sdk_compat, compat() below)."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tarfile

from ...errors import UserError

VENDOR_TOOLCHAIN = "/opt/kendryte-toolchain/bin"
GCC = "riscv64-unknown-elf-gcc"
SDK_DIR_NAME = "kendryte-standalone-sdk"
# files the build needs from an SDK (a folder without them is not the standalone SDK)
MARKERS = ("cmake/common.cmake", "cmake/macros.internal.cmake", "cmake/executable.cmake",
           "lds/kendryte.ld", "lib/bsp/crt.S", "lib/drivers/include/kpu.h")


def configured(session) -> str:
    return session.options["toolchain"]["sdk"] or os.environ.get("KENDRYTE_SDK", "")


def tarball(root: str) -> str | None:
    """The newest SDK tarball in ../shared/kendryte beside the project root, if any."""
    found = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(root)), "shared", "kendryte",
                                          SDK_DIR_NAME + "-*.tar.xz")))
    return found[-1] if found else None


def unpacked_dir(session) -> str:
    """Where the tarball is unpacked: one per target folder (its models share it)."""
    return os.path.join(os.path.dirname(session.build_dir), "sdk", SDK_DIR_NAME)


def locate(session) -> tuple:
    """(SDK folder, tarball to unpack there or None)."""
    name = session.target_cfg.name
    sdk = configured(session)
    if sdk:
        missing = [m for m in MARKERS if not os.path.isfile(os.path.join(sdk, m))]
        if missing:
            raise UserError(f"target '{name}' platform=board: {sdk!r} (toolchain.sdk / KENDRYTE_SDK) is not the "
                            f"Kendryte standalone SDK: {', '.join(missing)} missing; point it at a clone of "
                            f"github.com/kendryte/kendryte-standalone-sdk")
        return sdk, None
    tar = tarball(session.root)
    if tar is None:
        raise UserError(f"target '{name}' platform=board: the Kendryte standalone SDK was not found: KENDRYTE_SDK is "
                        f"unset and there is no ../shared/kendryte/{SDK_DIR_NAME}-*.tar.xz beside the project; "
                        f"clone github.com/kendryte/kendryte-standalone-sdk and set KENDRYTE_SDK to it "
                        f"(or targets.{name}.toolchain.sdk), or use platform=emul|qemu")
    return unpacked_dir(session), tar


def toolchain_dir() -> str:
    """The folder holding riscv64-unknown-elf-gcc ('' when there is none)."""
    tc = os.environ.get("KENDRYTE_TOOLCHAIN")
    if tc:
        return tc
    if os.access(os.path.join(VENDOR_TOOLCHAIN, GCC), os.X_OK):
        return VENDOR_TOOLCHAIN
    gcc = shutil.which(GCC)
    return os.path.dirname(gcc) if gcc else ""


def require_toolchain(session) -> str:
    name = session.target_cfg.name
    tc = toolchain_dir()
    if not tc or not os.access(os.path.join(tc, GCC), os.X_OK):
        where = os.path.join(tc, GCC) if tc else f"{GCC} (KENDRYTE_TOOLCHAIN unset, none on PATH)"
        raise UserError(f"target '{name}' platform=board: the compiler {where} was not found; set "
                        f"KENDRYTE_TOOLCHAIN to the Kendryte toolchain's bin folder, or install Debian's "
                        f"(apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf)")
    if not shutil.which("cmake"):
        raise UserError(f"target '{name}' platform=board: 'cmake' not found on PATH (apt-get install cmake)")
    return tc


def compat(tc: str) -> str:
    """'picolibc' when the toolchain has no libc of its own (Debian's: picolibc beside it), ''
    for the Kendryte toolchain (its newlib is what the SDK is written for)."""
    gcc = os.path.join(tc, GCC)
    out = subprocess.run([gcc, "-march=rv64imafc", "-mabi=lp64f", "-print-file-name=libc.a"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    return "" if os.path.isabs(out) else "picolibc"


def unpack(target, source, env):
    """SDK tarball -> build/<t>/sdk/kendryte-standalone-sdk (into a temporary folder first:
    an interrupted unpack leaves no half SDK)."""
    dst = os.path.dirname(os.path.dirname(str(target[0])))     # .../kendryte-standalone-sdk
    parent = os.path.dirname(dst)
    tmp = parent + "/.unpack"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(str(source[0])) as tar:
        if hasattr(tarfile, "data_filter"):        # Python >= 3.11.4: refuse links/paths outside tmp
            tar.extractall(tmp, filter="data")
        else:
            tar.extractall(tmp)
    shutil.rmtree(dst, ignore_errors=True)
    os.rename(os.path.join(tmp, SDK_DIR_NAME), dst)
    shutil.rmtree(tmp)
    return 0


def declare(env, session) -> tuple:
    """(SDK folder, nodes the SDK build depends on: the unpacked SDK's marker file or nothing)."""
    sdk, tar = locate(session)
    if tar is None:
        return sdk, []
    marker = os.path.join(sdk, "cmake", "common.cmake")
    nodes = env.get("NNS_K210_SDK_NODES", {})      # one unpack node per target folder
    if marker not in nodes:
        nodes[marker] = env.Command(marker, tar, env.Action(unpack, f"UNPACK {os.path.basename(tar)}"))
        env.Precious(nodes[marker])
        env["NNS_K210_SDK_NODES"] = nodes
    return sdk, nodes[marker]
