"""The run step for programs that execute on this machine (host target, emulators)."""
from __future__ import annotations

import os
import subprocess

from ..fileio import write_if_changed
from . import runlog


def run_native(target, source, env):
    """target: [run.log, output.npy]; source[0]: the firmware; bins live in NNS_BIN_DIR."""
    session = env["NNS_SESSION"]
    log_path, npy_path = str(target[0]), str(target[1])
    output_bin = os.path.join(os.path.dirname(log_path), "output.bin")
    cmd = [source[0].abspath, env["NNS_BIN_DIR"], output_bin]
    timeout = session.options["run"]["timeout"]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"RUN FAILED [{session.target_cfg.name}]: no result after {timeout} s "
              f"(targets.{session.target_cfg.name}.run.timeout)")
        return 1
    text = proc.stdout.decode("utf-8", "replace")
    if proc.returncode not in (0, 1):
        tail = "\n".join(text.splitlines()[-15:])
        print(f"RUN FAILED [{session.target_cfg.name}]: the program exited with status "
              f"{proc.returncode}:\n{tail}")
        return 1
    runlog.write_output(session, output_bin, npy_path)
    write_if_changed(log_path, text)
    return 0
