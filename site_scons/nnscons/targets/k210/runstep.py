"""The K210 run node: run the firmware on its platform, vet the log, write run.log/output.npy.

The network output comes back as `output <offset> <hex>` lines (the one channel every
platform has: stdout, semihosting, the board's serial port)."""
from __future__ import annotations

import os
import re

import numpy as np

from ...builders import runlog
from ...fileio import write_if_changed
from ..gap9.runstep import output_bytes
from ... import binfiles

FATAL = [(re.compile(r"KPU-EMUL ERROR"), "KPU emulator error"),
         (re.compile(r"illegal instruction|load access fault|store access fault|exception", re.I), "CPU fault"),
         (re.compile(r"\b(segmentation fault|bus error|abort)", re.I), "crash")]


def run_firmware(target, source, env):
    from . import platforms
    session = env["NNS_SESSION"]
    platform = env["NNS_PLATFORM"]
    tname = session.target_cfg.name
    log_path, npy_path = str(target[0]), str(target[1])
    status, log = platforms.run(platform, session, str(source[0]), env["NNS_BIN_DIR"])
    tail = "\n".join(log.splitlines()[-15:])
    if status is None:
        print(f"RUN FAILED [{tname}] on {platform}: no result after {session.options['run']['timeout']} s "
              f"(targets.{tname}.run.timeout)\n{tail}")
        return 1
    for pattern, what in FATAL:
        for line in log.splitlines():
            if pattern.search(line):
                print(f"RUN FAILED [{tname}] on {platform}: {what}: {line.strip()}\n{tail}")
                return 1
    if status not in (0, 1):
        print(f"RUN FAILED [{tname}] on {platform}: exit status {status}:\n{tail}")
        return 1
    size = int(np.prod(session.graph.tensor(session.graph.output).shape))
    data = output_bytes(log, size)
    if data is None:
        print(f"RUN FAILED [{tname}] on {platform}: the log holds no complete network output:\n{tail}")
        return 1
    output_bin = binfiles.output_path(os.path.dirname(log_path))
    write_if_changed(output_bin, data)
    runlog.write_output(session, output_bin, npy_path)
    write_if_changed(log_path, log)
    return 0
