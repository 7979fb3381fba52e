"""The K210 run node: run the firmware on its platform, vet the log, write run.log/output.npy.

The network output comes back as `output <offset> <hex>` lines (the one channel every
platform has: stdout, semihosting, the board's serial port)."""
from __future__ import annotations

import re

from ...builders.run import simrun

FATAL = [(re.compile(r"KPU-EMUL ERROR"), "KPU emulator error"),
         (re.compile(r"illegal instruction|load access fault|store access fault|exception", re.I), "CPU fault"),
         (re.compile(r"\b(segmentation fault|bus error|abort)", re.I), "crash")]


def run_firmware(target, source, env):
    from . import platforms
    session = env["NNS_SESSION"]
    platform = env["NNS_PLATFORM"]
    if platform == "board":
        from ...errors import UserError
        from . import board
        try:
            board.check_flash(session, env)
        except UserError as e:
            print(f"FLASH FAILED: {e}")
            return 2
    status, log = platforms.run(platform, session, str(source[0]), env["NNS_BIN_DIR"], env)
    return simrun.finish(f"RUN FAILED [{session.target_cfg.name}] on {platform}", session, status, log, FATAL,
                         str(target[0]), str(target[1]))
