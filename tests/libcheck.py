"""What a generated library keeps in writable static memory: the test that it keeps none.

Every section of every object in an archive that a program could write at run time (.data,
.bss, .sdata, .sbss, thread-local, COMMON) counts; read-only data and .data.rel.ro (written
once by the loader's relocations) do not."""
from __future__ import annotations

import re
import subprocess

WRITABLE = re.compile(r"^\.(data|bss|sdata|sbss|tdata|tbss|sdata2|sbss2)(\..*)?$")
RELRO = re.compile(r"^\.data\.rel\.ro(\..*)?$")


def mutable_static_bytes(archive: str, objdump: str = "objdump", skip=()) -> dict:
    """{object: {section: bytes}} of the archive's writable static sections with bytes in
    them; skip: object names left out (a device model that stands in for hardware)."""
    out = subprocess.run([objdump, "-h", archive], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, check=True).stdout
    found, member = {}, None
    for line in out.splitlines():
        m = re.match(r"^(\S+\.o):\s+file format", line)
        if m:
            member = m.group(1)
            continue
        f = line.split()
        if len(f) >= 3 and f[0].isdigit() and member not in skip:
            name, size = f[1], int(f[2], 16)
            if size and WRITABLE.match(name) and not RELRO.match(name):
                found.setdefault(member, {})[name] = size
    # COMMON symbols (tentative definitions) have no section of their own
    nm = objdump.replace("objdump", "nm")
    for line in subprocess.run([nm, "-A", archive], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in ("C",):
            member = f[0].split(":")[-2] if f[0].count(":") >= 2 else f[0]
            if member not in skip:
                found.setdefault(member, {})["COMMON " + f[2]] = 1
    return found
