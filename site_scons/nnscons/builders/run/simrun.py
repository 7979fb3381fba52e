"""The run node of a device program whose only channel back is its log (a simulator, an
emulator, a board's serial port): vet the log, recover the network output from its
`output <offset> <hex>` lines, write output.bin, output.npy and run.log.

A simulator's exit status is not trusted alone: a run passes only without a fatal line
(each target lists its own), with status 0 or 1 (1: the program's own check failed), and
with the whole output in the log.
"""
from __future__ import annotations

import os
import re

import numpy as np

from ... import binfiles
from ...fileio import write_if_changed
from . import runlog

_OUTPUT = re.compile(r"^output (\d+) ([0-9a-f]*)$")


def fatal_in(log: str, fatal: list):
    """The first line of the log matching one of fatal [(pattern, what)], as (what, line)."""
    for line in log.splitlines():
        for pattern, what in fatal:
            if pattern.search(line):
                return what, line.strip()
    return None


def output_bytes(log: str, size: int):
    """The network output the program printed as `output <offset> <hex>` lines; None unless
    all `size` bytes are there."""
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


def vetted(what: str, session, status, log: str, fatal: list) -> bool:
    """Whether the run ended as a program that ran to its end does; if not, print why,
    prefixed by `what` (e.g. "RUN FAILED [gap9] on qemu"), with the log's tail."""
    tail = "\n".join(log.splitlines()[-15:])
    tname = session.target_cfg.name
    if status is None:
        print(f"{what}: no result after {session.options['run']['timeout']} s "
              f"(targets.{tname}.run.timeout)\n{tail}")
        return False
    found = fatal_in(log, fatal)
    if found:
        print(f"{what}: {found[0]}: {found[1]}\n{tail}")
        return False
    if status not in (0, 1):
        print(f"{what}: exit status {status}:\n{tail}")
        return False
    return True


def network_output_size(session) -> int:
    return sum(int(np.prod(session.graph.tensor(t).shape)) for t in session.graph.outputs)


def write_results(session, data: bytes, log: str, log_path: str, npy_path: str) -> None:
    """output.bin beside run.log, output.npy from it, then run.log (last: it marks the run done)."""
    output_bin = binfiles.output_path(os.path.dirname(log_path))
    write_if_changed(output_bin, data)
    runlog.write_output(session, output_bin, npy_path)
    write_if_changed(log_path, log)


def finish(what: str, session, status, log: str, fatal: list, log_path: str, npy_path: str) -> int:
    """A whole network's run: vet the log, recover the output, write the results; 0 or 1."""
    if not vetted(what, session, status, log, fatal):
        return 1
    data = output_bytes(log, network_output_size(session))
    if data is None:
        tail = "\n".join(log.splitlines()[-15:])
        print(f"{what}: the log holds no complete network output:\n{tail}")
        return 1
    write_results(session, data, log, log_path, npy_path)
    return 0
