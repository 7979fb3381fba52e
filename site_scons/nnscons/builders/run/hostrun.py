"""The run step for programs that execute on this machine (host target, emulators)."""
from __future__ import annotations

import os
import shlex
import subprocess

from ...fileio import write_if_changed
from . import runlog
from ... import binfiles


def run_program(cmd, timeout, cwd=None, env=None, show=False):
    """Run a program (firmware, emulator, simulator) on this machine: (exit status, or None
    on timeout, and stdout+stderr as text, what was printed so far on a timeout).  show:
    print the command line first (verbose=1)."""
    if show:
        print(("cd %s && " % cwd if cwd else "") + " ".join(shlex.quote(str(c)) for c in cmd))
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return None, (e.output or b"").decode("utf-8", "replace")
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def run_native(target, source, env, prefix=(), clean=None):
    """target: [run.log, output.npy]; source[0]: the firmware; bins live in NNS_BIN_DIR.
    prefix: an emulator's command line in front of the program (qemu-aarch64 -cpu X);
    clean: text -> text, the emulator's own lines taken out of what the program printed."""
    session = env["NNS_SESSION"]
    log_path, npy_path = str(target[0]), str(target[1])
    output_bin = binfiles.output_path(os.path.dirname(log_path))
    cmd = list(prefix) + [source[0].abspath, env["NNS_BIN_DIR"], output_bin]
    timeout = session.options["run"]["timeout"]
    status, text = run_program(cmd, timeout, show=env["NNS_VERBOSE"])
    if clean is not None:
        text = clean(text)
    if status is None:
        print(f"RUN FAILED [{session.target_cfg.name}]: no result after {timeout} s "
              f"(targets.{session.target_cfg.name}.run.timeout)")
        return 1
    if status not in (0, 1):
        tail = "\n".join(text.splitlines()[-15:])
        print(f"RUN FAILED [{session.target_cfg.name}]: the program exited with status "
              f"{status}:\n{tail}")
        return 1
    runlog.write_output(session, output_bin, npy_path)
    write_if_changed(log_path, text)
    return 0

