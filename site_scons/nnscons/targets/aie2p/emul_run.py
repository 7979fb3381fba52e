"""platform=emul: run a network on this machine through the DMA-pattern emulator.

    python -m nnscons.targets.aie2p.emul_run <build dir> <output.bin>

Per layer: the weights .bin and input go through emulator.run_layer; the kernel is the
layer's scalar kernel built natively (emul/<cname>.so, nns_emul_calls).
"""
from __future__ import annotations

import ctypes
import json
import os
import sys

import numpy as np

from ... import binfiles
from . import emulator, host_layers, runner
from .patterns import PatternError


def _calls_fn(so_path: str, a_bytes_out: int):
    lib = ctypes.CDLL(os.path.abspath(so_path))
    fn = lib.nns_emul_calls
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = None

    def calls(a, w):
        out = np.empty((a.shape[0], a_bytes_out), dtype=np.uint8)
        fn(a.ctypes.data, a.shape[0], w.ctypes.data, out.ctypes.data)
        return out
    return calls


def main(build_dir: str, output_bin: str) -> int:
    def run_layer(layer, x):
        cname = layer["cname"]
        with open(os.path.join(build_dir, "src", "layers", cname + "_dma.json")) as f:
            dma = json.load(f)["dma"]
        w = np.fromfile(binfiles.bin_path(build_dir, "weights", cname), dtype=np.uint8)
        fn = _calls_fn(os.path.join(build_dir, "emul", cname + ".so"), dma["out_l1"]["bytes"])
        return emulator.run_layer(dma, x, w, fn, f"layer {cname}")
    try:
        lines, out = runner.run_network(build_dir, run_layer, host_layers.host_runner(build_dir))
    except PatternError as e:
        print(f"EMULATOR: {e}")
        return 3
    return runner.finish(build_dir, lines, out, output_bin)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
