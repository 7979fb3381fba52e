"""The GAP9 run node: run the firmware on its platform, vet the log, write run.log/output.npy.

gvsoc's exit status is not reliable, so success is read from the log: the program's
`Test PASSED` and no fatal pattern. The network output comes back as `output <offset> <hex>`
lines (the only channel every platform has).
"""
from __future__ import annotations

import os
import re

import numpy as np

from ...builders import runlog
from ...fileio import write_if_changed
from . import platforms

# Lines by which gvsoc, the SDK runtime or the emulation report a crash the program
# itself cannot print.
FATAL = [
    (re.compile(r"stack overflow", re.I), "stack overflow"),
    (re.compile(r"invalid (access|fetch)", re.I), "invalid memory access"),
    (re.compile(r"illegal instruction", re.I), "illegal instruction"),
    (re.compile(r"PMSIS-EMUL ERROR"), "PMSIS emulation error"),
    (re.compile(r"PULP-OPEN ERROR"), "pulp-open runtime error"),
    (re.compile(r"\b(segmentation fault|bus error|abort)", re.I), "crash"),
]
_OUTPUT = re.compile(r"^output (\d+) ([0-9a-f]*)$")


def fatal_in(log: str):
    """The first fatal line of a log as (what, line), or None."""
    for line in log.splitlines():
        for pattern, what in FATAL:
            if pattern.search(line):
                return what, line.strip()
    return None


def output_bytes(log: str, size: int):
    data = bytearray(size)
    seen = 0
    for line in log.splitlines():
        m = _OUTPUT.match(line.strip())
        if m:
            chunk = bytes.fromhex(m.group(2))
            off = int(m.group(1))
            data[off:off + len(chunk)] = chunk
            seen += len(chunk)
    return bytes(data) if seen == size else None


def run_firmware(target, source, env):
    session = env["NNS_SESSION"]
    platform = env["NNS_PLATFORM"]
    tname = session.target_cfg.name
    log_path, npy_path = str(target[0]), str(target[1])
    status, log = platforms.run(platform, session, str(source[0]), env["NNS_BIN_DIR"], show=env["NNS_VERBOSE"])
    tail = "\n".join(log.splitlines()[-15:])
    if status is None:
        print(f"RUN FAILED [{tname}] on {platform}: no result after "
              f"{session.options['run']['timeout']} s (targets.{tname}.run.timeout)\n{tail}")
        return 1
    fatal = fatal_in(log)
    if fatal:
        print(f"RUN FAILED [{tname}] on {platform}: {fatal[0]}: {fatal[1]}\n{tail}")
        return 1
    if status not in (0, 1):
        print(f"RUN FAILED [{tname}] on {platform}: exit status {status}:\n{tail}")
        return 1
    size = int(np.prod(session.graph.tensor(session.graph.output).shape))
    data = output_bytes(log, size)
    if data is None:
        print(f"RUN FAILED [{tname}] on {platform}: the log holds no complete network output:\n{tail}")
        return 1
    output_bin = os.path.join(os.path.dirname(log_path), "output.bin")
    write_if_changed(output_bin, data)
    runlog.write_output(session, output_bin, npy_path)
    write_if_changed(log_path, log)
    return 0
