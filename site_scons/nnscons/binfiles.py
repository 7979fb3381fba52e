"""The names of a build's .bin files: one rule for every writer and reader.

Under `<build>/bin/`: `input.bin`, and per layer (by its C identifier, `cname`) its weights
and golden output, as `weights/<cname>.bin` and `golden/<cname>.bin` ("tree"), or
`<cname>_weights.bin` and `<cname>_golden.bin` ("flat": one namespace, as a device's file
system wants, gap9's readfs).  A run writes `output.bin` beside its run.log.

Standalone on purpose (no nnscons imports): the aie2p NPU runner loads it by path under
the mlir-aie Python.
"""
from __future__ import annotations

import os

INPUT = "input.bin"
OUTPUT = "output.bin"
BENCH_OUTPUT = "bench_output.bin"          # host: the output of a timed run
KINDS = ("weights", "golden")
STYLES = ("tree", "flat")


def bin_name(kind: str, cname: str, style: str = "tree") -> str:
    """Path under bin/ of a layer's 'weights' or 'golden' file ('/'-separated)."""
    if kind not in KINDS or style not in STYLES:
        raise ValueError(f"bin_name: kind {kind!r}, style {style!r}")
    if style == "flat":
        return f"{cname}_{kind}.bin"
    return f"{kind}/{cname}.bin"


def bin_stem(kind: str, cname: str, style: str = "tree") -> str:
    """bin_name without '.bin' (what an embedded-file table or a C format string holds)."""
    return bin_name(kind, cname, style)[:-len(".bin")]


def bin_path(build_dir: str, kind: str, cname: str, style: str = "tree") -> str:
    """The file of bin_name under <build_dir>/bin."""
    return os.path.join(build_dir, "bin", *bin_name(kind, cname, style).split("/"))


def input_path(build_dir: str) -> str:
    return os.path.join(build_dir, "bin", INPUT)


def output_array(n_outputs: int) -> str:
    """The run's dequantized output beside run.log: output.npy, or output.npz (keyed by
    output name) for a model with several outputs."""
    return "output.npy" if n_outputs == 1 else "output.npz"


def output_path(run_dir: str, bench: bool = False) -> str:
    """The raw network output a run writes beside its run.log (bench: a timed run's)."""
    return os.path.join(run_dir, BENCH_OUTPUT if bench else OUTPUT)
