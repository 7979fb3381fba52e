"""Flash and RAM use of a cortex-m firmware, per memory of its machine, from the ELF's
section sizes (arm-none-eabi-size -A): report.json's `cortex_m_memory` and a summary line."""
from __future__ import annotations

import json
import subprocess

from ...fileio import write_if_changed

CODE = (".text", ".ARM.exidx", ".data")      # .data's load image is in the code memory too
DATA = (".data", ".bss")


def sections(size_tool: str, elf: str) -> dict:
    out = subprocess.run([size_tool, "-A", elf], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[0].startswith(".") and f[1].isdigit():
            found[f[0]] = int(f[1])
    return found


def usage(found: dict, core: dict, stack: int) -> dict:
    code = sum(found.get(s, 0) for s in CODE)
    data = sum(found.get(s, 0) for s in DATA) + stack
    out = {"machine": core["machine"], "code_bytes": code, "code_size": core["code"][1],
           "data_bytes": data, "data_size": core["data"][1], "stack_bytes": stack}
    if ".weights" in found:         # weights in the bulk memory (nodes.weights_in_bulk)
        out.update(bulk_bytes=found[".weights"], bulk_size=core["bulk"][1], bulk_origin=core["bulk"][0])
    return out


def write_report(target, source, env):
    from .cores import STACK, core
    session = env["NNS_SESSION"]
    cc = session.options["toolchain"]["cc"]
    size_tool = cc[:-3] + "size" if cc.endswith("gcc") else "size"
    c = core(session.options)
    u = usage(sections(size_tool, source[0].abspath), c, STACK)
    line = (f"memory ({c['machine']}): code and read-only data {u['code_bytes'] / 1024:.1f} KiB of "
            f"{u['code_size'] // 1024} KiB at {c['code'][0]:#x}; data, bss and the "
            f"{STACK // 1024} KiB stack {u['data_bytes'] / 1024:.1f} KiB of {u['data_size'] // 1024} KiB "
            f"at {c['data'][0]:#x} (the harness's buffers included)")
    if "bulk_bytes" in u:
        line += (f"; the weights {u['bulk_bytes'] / 1024:.1f} KiB of {u['bulk_size'] // 1024} KiB "
                 f"at {u['bulk_origin']:#x}")
    doc = {"cortex_m_memory": u, "summary_lines": [line]}
    write_if_changed(str(target[0]), json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0
