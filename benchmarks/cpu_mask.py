"""Run programs as if on an AVX2-only x86-64, on a CPU that has more (AVX-512, AVX-VNNI).

    .venv/bin/python benchmarks/cpu_mask.py PROGRAM [ARGS...]   # a patched copy of PROGRAM, masked

Both the firmware and onnxruntime pick their kernels by CPUID (and XCR0, through xgetbv) at
run time.  Here a copy of each binary has its cpuid and xgetbv instructions replaced by int3
(found by objdump's disassembly, never by byte search), and a preloaded library
(benchmarks/cpu_mask.c) answers them with this CPU's own values less AVX-512, AVX-VNNI and
AMX.  The program then takes the kernels an AVX2-only CPU would (onnxruntime its AVX2
QGEMM, the firmware its avx2 and wino-avx2 variants) and runs them at this core's full
speed: a measurement of the AVX2 code paths on this microarchitecture, not of an older CPU.
glibc's own string functions are held to AVX2 by its tunable.  Everything is written under
build/cpu_mask/.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "cpu_mask")
SHIM_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpu_mask.c")
# glibc's ifuncs (memcpy ...) without the AVX-512 ones
GLIBC_TUNABLES = "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD"
PATCH = {"cpuid": (b"\x0f\xa2", b"\xcc\xa2"), "xgetbv": (b"\x0f\x01\xd0", b"\xcc\x01\xd0")}
_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(cpuid|xgetbv)\s*$")


class MaskError(Exception):
    pass


def _load_segments(data: bytes):
    """(vaddr, offset, filesz) of an x86-64 ELF's PT_LOAD segments."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise MaskError("not a 64-bit little-endian ELF file")
    e_phoff, = struct.unpack_from("<Q", data, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 0x36)
    segs = []
    for i in range(e_phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 1:
            segs.append((p_vaddr, p_offset, p_filesz))
    return segs


def sites(path: str):
    """[(virtual address, 'cpuid' | 'xgetbv')] of the instructions objdump disassembles."""
    proc = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode:
        raise MaskError(f"objdump -d {path} failed: {proc.stderr.strip()[:300]}")
    return [(int(m.group(1), 16), m.group(2)) for m in map(_INSN.match, proc.stdout.splitlines()) if m]


def patch_elf(src: str, dst: str) -> int:
    """Copy src to dst with every cpuid/xgetbv replaced by int3 + the instruction's other bytes
    (the preloaded handler reads them); returns how many were patched."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    segs = _load_segments(bytes(data))
    n = 0
    for vaddr, insn in sites(src):
        off = next((o + vaddr - v for v, o, sz in segs if v <= vaddr < v + sz), None)
        want, new = PATCH[insn]
        if off is None or data[off:off + len(want)] != want:
            raise MaskError(f"{src}: {insn} at {vaddr:#x} is not where objdump put it")
        data[off:off + len(new)] = new
        n += 1
    fd, tmp = tempfile.mkstemp(prefix=".patch-", dir=os.path.dirname(dst))
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, os.stat(src).st_mode & 0o777)
    os.replace(tmp, dst)
    return n


def shim(out: str = OUT) -> str:
    """The preloaded library, compiled under build/cpu_mask/ when its source changed."""
    os.makedirs(out, exist_ok=True)
    so = os.path.join(out, "libcpu_mask.so")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(SHIM_SOURCE):
        tmp = so + ".tmp"
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-o", tmp, SHIM_SOURCE],
                       check=True)
        os.replace(tmp, so)
    return so


def masked_copy(src: str, name: str | None = None) -> str:
    """A patched copy of one program under build/cpu_mask/bin/ (made again when src changes)."""
    d = os.path.join(OUT, "bin")
    os.makedirs(d, exist_ok=True)
    tag = hashlib.sha1(os.path.abspath(src).encode()).hexdigest()[:8]
    dst = os.path.join(d, name or f"{tag}-{os.path.basename(src)}")
    if not os.path.exists(dst) or os.path.getmtime(dst) < os.path.getmtime(src):
        if patch_elf(src, dst) == 0:
            raise MaskError(f"{src}: no cpuid or xgetbv to patch: it cannot be masked this way")
    return dst


def masked_onnxruntime() -> str:
    """A directory to put first on PYTHONPATH: a copy of the installed onnxruntime package
    whose shared objects are patched.  Kept while the installed one's files are unchanged."""
    import importlib.util
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise MaskError("onnxruntime is not installed in this Python")
    pkg = list(spec.submodule_search_locations)[0]
    libs = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(pkg) for f in fs if ".so" in f)
    stamp = repr([(os.path.relpath(p, pkg), os.path.getsize(p), os.path.getmtime(p)) for p in libs])
    site = os.path.join(OUT, "site")
    stamp_path = os.path.join(site, "STAMP")
    try:
        with open(stamp_path, encoding="utf-8") as f:
            if f.read() == stamp:
                return site
    except OSError:
        pass
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".site-", dir=OUT)
    shutil.copytree(pkg, os.path.join(tmp, "onnxruntime"), symlinks=True)
    patched = 0
    for p in libs:
        q = os.path.join(tmp, "onnxruntime", os.path.relpath(p, pkg))
        if not os.path.islink(q):
            patched += patch_elf(p, q)
    if not patched:
        raise MaskError(f"{pkg}: no cpuid or xgetbv found in its libraries")
    with open(os.path.join(tmp, "STAMP"), "w", encoding="utf-8") as f:
        f.write(stamp)
    shutil.rmtree(site, ignore_errors=True)
    os.replace(tmp, site)
    return site


def env(report: str | None = None, base: dict | None = None, out: str = OUT) -> dict:
    """The environment a patched program runs masked in."""
    e = dict(os.environ if base is None else base)
    e["LD_PRELOAD"] = " ".join(filter(None, [shim(out), e.get("LD_PRELOAD", "")]))
    e["GLIBC_TUNABLES"] = ":".join(filter(None, [e.get("GLIBC_TUNABLES", ""), GLIBC_TUNABLES]))
    if report:
        e["NNSCONS_CPU_MASK_REPORT"] = report
    return e


def emulated(report: str) -> dict:
    """{pid: (cpuid, xgetbv)} counts from a report file (one line per masked process)."""
    out = {}
    try:
        with open(report, encoding="utf-8") as f:
            for line in f:
                pid, c, x = line.split()
                out[int(pid)] = (int(c.split("=")[1]), int(x.split("=")[1]))
    except OSError:
        pass
    return out


def main(argv) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    prog = shutil.which(argv[0]) or argv[0]
    try:
        copy = masked_copy(prog)
        return subprocess.run([copy] + argv[1:], env=env()).returncode
    except (MaskError, OSError) as e:
        print(f"cpu_mask: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
