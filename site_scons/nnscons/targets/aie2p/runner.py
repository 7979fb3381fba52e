"""The network run shared by the emulator and the XRT runner: DDR tensors between layers,
the per-layer check against the golden .bin, the run.log lines (build/runlog.py format).

Standalone on purpose (numpy only): the XRT runner executes under the mlir-aie Python.
"""
from __future__ import annotations

import json
import os

import numpy as np

try:
    from ... import binfiles
except ImportError:          # imported as a top-level module by xrt_runner.py
    import binfiles


def compare(i: int, cname: str, got: np.ndarray, golden: np.ndarray) -> str:
    g, e = got.view(np.int8).astype(np.int32), golden.view(np.int8).astype(np.int32)
    if g.size == e.size and np.array_equal(g, e):
        return f"layer {i} {cname}: OK"
    if g.size != e.size:
        return f"layer {i} {cname}: MISMATCH {e.size}/{e.size} elements, max |diff| 255, first at 0 (size {g.size})"
    bad = np.flatnonzero(g != e)
    k = int(bad[0])
    return (f"layer {i} {cname}: MISMATCH {bad.size}/{e.size} elements, max |diff| "
            f"{int(np.abs(g - e).max())}, first at {k} (got {g[k]}, expected {e[k]})")


def stage(x: np.ndarray, st) -> np.ndarray:
    """A layer's input as its DMAs read it from DDR (layerplan's "stage"): the HWC bytes
    zero-padded by (top, bottom, left, right) rows/columns, zero channels appended."""
    if st is None:
        return x
    (h, w, c), (pt, pb, pl, pr), (hp, wp, cp) = st["from"], st["pad"], st["to"]
    if (hp, wp, cp) == (h, w, c):
        return x
    xp = np.zeros((hp, wp, cp), dtype=np.uint8)
    xp[pt:pt + h, pl:pl + w, :c] = x.reshape(h, w, c)
    return xp.reshape(-1)


def unstage(y: np.ndarray, st) -> np.ndarray:
    """The layer's output without the padding output channels (Op > O)."""
    if st is None or st["out_channels"][0] == st["out_channels"][1]:
        return y
    o, op = st["out_channels"]
    return np.ascontiguousarray(y.reshape(-1, op)[:, :o]).reshape(-1)


def run_network(build_dir: str, run_layer, run_host=None) -> tuple[list, np.ndarray]:
    """run_layer(layer entry, input bytes uint8) -> output bytes uint8, for 'npu' layers;
    run_host(layer entry, [input bytes]) -> output bytes for 'host' layers (fallback: host).
    Returns (log lines, the network outputs' bytes back to back)."""
    with open(os.path.join(build_dir, "src", "network.json")) as f:
        net = json.load(f)
    packed, at, tensors = np.fromfile(binfiles.input_path(build_dir), dtype=np.uint8), 0, {}
    for k in net["inputs"]:         # input.bin: the network inputs back to back
        tensors[k], at = packed[at:at + net["tensors"][k]], at + net["tensors"][k]
    lines, ok = [], True
    for i, layer in enumerate(net["layers"]):
        x = tensors[layer["input"]]
        if layer["kind"] == "view":
            y = x
        elif layer["kind"] == "host":
            y = run_host(layer, [tensors[t] for t in layer["inputs"]])
        else:
            if layer["act_dtype"] == "uint8":   # int8 with zero point -128 == uint8 with zero point 0
                x = x ^ np.uint8(0x80)
            y = unstage(run_layer(layer, stage(x, layer.get("stage"))), layer.get("stage"))
        tensors[layer["output"]] = y
        golden = np.fromfile(binfiles.bin_path(build_dir, "golden", layer["cname"]), dtype=np.uint8)
        lines.append(compare(i, layer["cname"], y, golden))
        ok = ok and lines[-1].endswith(": OK")
    lines.append("Test PASSED" if ok else "Test FAILED: see the MISMATCH lines")
    return lines, np.concatenate([tensors[k] for k in net["outputs"]])


def finish(build_dir: str, lines: list, output: np.ndarray, output_bin: str) -> int:
    output.tofile(output_bin)
    print("\n".join(lines))
    return 0
