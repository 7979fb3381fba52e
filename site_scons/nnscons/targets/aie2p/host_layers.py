"""fallback: host -- the layers that do not map onto the NPU, run on the host CPU with the
`host` target's portable C kernels (kernels/common, compiled once into nn_host.so).

Standalone on purpose (numpy + ctypes only): the XRT runner executes under the mlir-aie
Python. Activations between layers are HWC bytes in DDR; the C kernels are CHW, so a
4-D operand of a windowed op (pool, conv) is transposed on the way in and back on the
way out; elementwise ops (add, requant, concat per channel slice in CHW) need the CHW
order only for concat. A layer's spec (src/layers/<L>_host.json) holds the shapes, zero
points and window attributes; its weights .bin the host target's sections (weight, bias,
mult, shift at the layout's offsets). The emulated library (platform=emul) runs the same
CHW kernels from C instead: templates/cpu's layer inside templates/aie2p/host_layer.c.j2.
"""
from __future__ import annotations

import ctypes
import json
import os

import numpy as np

try:
    from ... import binfiles
except ImportError:          # imported as a top-level module by xrt_runner.py
    import binfiles

I32 = ctypes.c_int32
P8 = ctypes.c_void_p


class ConvCfg(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in (
        "in_c", "in_h", "in_w", "out_c", "out_h", "out_w", "k_h", "k_w", "stride_h", "stride_w",
        "dil_h", "dil_w", "pad_top", "pad_left", "groups")] + [
        (n, I32) for n in ("in_zp", "out_zp", "act_min", "act_max")]


class LinearCfg(ctypes.Structure):
    _fields_ = [("in_features", ctypes.c_int), ("out_features", ctypes.c_int)] + [
        (n, I32) for n in ("in_zp", "out_zp", "act_min", "act_max")]


class PoolCfg(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in (
        "c", "in_h", "in_w", "out_h", "out_w", "k_h", "k_w", "stride_h", "stride_w", "dil_h",
        "dil_w", "pad_top", "pad_left", "count_include_pad")] + [(n, I32) for n in ("in_zp", "out_zp", "act_min", "act_max")]


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(P8)


def _pool(lib, spec, p, chw, out):
    i, o, act = spec["inputs"][0], spec["out"], spec["act"]
    cfg = PoolCfg(i["c"], i["h"], i["w"], o["h"], o["w"], *spec["kernel"], *spec["stride"],
                  *spec["dilation"], spec["pads"][0], spec["pads"][1], spec["count_include_pad"],
                  i["zp"], o["zp"], *act)
    getattr(lib, f"nn_{spec['op']}_s8")(ctypes.byref(cfg), _ptr(chw[0]), _ptr(p["mult"]),
                                        _ptr(p["shift"]), _ptr(out))


def _global_avgpool(lib, spec, p, chw, out):
    i, o, act = spec["inputs"][0], spec["out"], spec["act"]
    lib.nn_global_avgpool_s8(i["c"], i["h"] * i["w"], I32(i["zp"]), I32(o["zp"]), I32(act[0]),
                             I32(act[1]), _ptr(chw[0]), _ptr(p["mult"]), _ptr(p["shift"]), _ptr(out))


def _add(lib, spec, p, chw, out):
    (a, b), o, act = spec["inputs"], spec["out"], spec["act"]
    lib.nn_add_s8(o["size"], _ptr(chw[0]), I32(a["zp"]), _ptr(chw[1]), I32(b["zp"]),
                  _ptr(p["mult"]), _ptr(p["shift"]), I32(o["zp"]), I32(act[0]), I32(act[1]), _ptr(out))


def _requant(lib, spec, p, chw, out):
    """requant and concat: each input requantized into its slice of the CHW output."""
    o, act = spec["out"], spec["act"]
    off = 0
    for k, (x, t) in enumerate(zip(chw, spec["inputs"])):
        lib.nn_requant_s8(t["size"], _ptr(x), I32(t["zp"]), I32(int(p["mult"][k])),
                          I32(int(p["shift"][k])), I32(o["zp"]), I32(act[0]), I32(act[1]),
                          ctypes.c_void_p(out.ctypes.data + off))
        off += t["size"]


def _conv2d(lib, spec, p, chw, out):
    i, o, act = spec["inputs"][0], spec["out"], spec["act"]
    cfg = ConvCfg(i["c"], i["h"], i["w"], o["c"], o["h"], o["w"], *spec["kernel"], *spec["stride"],
                  *spec["dilation"], spec["pads"][0], spec["pads"][1], spec["groups"],
                  i["zp"], o["zp"], *act)
    lib.nn_conv2d_s8(ctypes.byref(cfg), _ptr(chw[0]), _ptr(p["weight"]),
                     _ptr(p["bias"]) if "bias" in p else None, _ptr(p["mult"]), _ptr(p["shift"]), _ptr(out))


def _linear(lib, spec, p, chw, out):
    i, o, act = spec["inputs"][0], spec["out"], spec["act"]
    cfg = LinearCfg(i["size"], o["size"], i["zp"], o["zp"], *act)
    lib.nn_linear_s8(ctypes.byref(cfg), _ptr(chw[0]), _ptr(p["weight"]),
                     _ptr(p["bias"]) if "bias" in p else None, _ptr(p["mult"]), _ptr(p["shift"]), _ptr(out))


def _lut(lib, spec, p, chw, out):
    i = spec["inputs"][0]
    per = p["weight"].size > 256
    lib.nn_lut_s8(1, i["c"] if per else 1, i["h"] * i["w"] if per else i["size"], _ptr(chw[0]),
                  _ptr(p["weight"]), 256 if per else 0, _ptr(out))


def _mul(lib, spec, p, chw, out):
    (a, b), o, act = spec["inputs"], spec["out"], spec["act"]
    mode = spec["mode"]
    outer, c, inner = (1, a["c"], a["h"] * a["w"]) if mode == "channel" else (1, 1, o["size"])
    strides = {"channel": (0, 1, 0), "scalar": (0, 0, 0), "same": (0, 0, 1)}[mode]
    lib.nn_mul_s8(outer, c, inner, _ptr(chw[0]), I32(a["zp"]), _ptr(chw[1]), I32(b["zp"]),
                  *strides, I32(int(p["mult"][0])), I32(int(p["shift"][0])), I32(o["zp"]),
                  I32(act[0]), I32(act[1]), _ptr(out))


def _move(lib, spec, p, chw, out):
    """The index is NCHW: it gathers CHW bytes."""
    lib.nn_gather_s8(spec["out"]["size"], _ptr(chw[0]), _ptr(p["index"]), _ptr(p["weight"]),
                     ctypes.c_int8(spec["fill"]), _ptr(out))


def _softmax(lib, spec, p, chw, out):
    o, act = spec["out"], spec["act"]
    lib.nn_softmax_s8(1, o["size"], _ptr(chw[0]), _ptr(p["bias"]), I32(int(p["mult"][0])),
                      I32(int(p["shift"][0])), I32(o["zp"]), I32(act[0]), I32(act[1]), _ptr(out))


def _reduce(lib, spec, p, chw, out):
    """CHW: (C, H, W) in memory order."""
    i, (rc, rh, rw), o, act = spec["inputs"][0], spec["reduced_chw"], spec["out"], spec["act"]
    lib.nn_reduce_s8(i["c"], i["h"], i["w"], rc + 2 * rh + 4 * rw, spec["fn_code"], _ptr(chw[0]),
                     I32(i["zp"]), I32(int(p["mult"][0])), I32(int(p["shift"][0])), I32(o["zp"]),
                     I32(act[0]), I32(act[1]), _ptr(out), 0, o["size"])


def _nary(lib, spec, p, chw, out):
    """CHW walk: outer 1, C, inner H*W."""
    ins, o, act = spec["inputs"], spec["out"], spec["act"]
    n = len(ins)
    xs_p = (P8 * n)(*[x.ctypes.data for x in chw])
    zps = np.array([t["zp"] for t in ins], np.int32)
    modes = np.array(spec["modes"], np.int32)
    lib.nn_nary_s8(n, 1, o["c"], o["h"] * o["w"], xs_p, _ptr(zps), _ptr(modes), spec["fn_code"],
                   _ptr(p["mult"]), _ptr(p["shift"]), I32(o["zp"]), I32(act[0]), I32(act[1]),
                   _ptr(out), 0, o["size"])


def _island_avgpool(lib, spec, p, chw, out):
    """CHW: pixel q of channel ch at ch * H * W + q."""
    i, o, act = spec["inputs"][0], spec["out"], spec["act"]
    hw = i["h"] * i["w"]
    lib.nn_island_avgpool_part_s8(hw, ctypes.c_long(1), ctypes.c_long(hw), 0, i["c"], spec["tables"],
                                  _ptr(chw[0]), _ptr(p["bias"]), I32(spec["frac"]), I32(o["zp"]),
                                  I32(act[0]), I32(act[1]), _ptr(out))


# the host-layer bindings, the fallback's ops: op -> (lib, spec, params, CHW inputs, output)
# -> None, the call of its kernel in nn_host.so. fallback.OPS (the planner's op table: the
# templates/cpu file the emulated library compiles, a check) is built over these keys, so an
# op is offered exactly when it has a binding here.
BINDINGS = {"maxpool": _pool, "avgpool": _pool, "global_avgpool": _global_avgpool, "add": _add,
            "requant": _requant, "concat": _requant, "conv2d": _conv2d, "linear": _linear, "lut": _lut,
            "mul": _mul, "move": _move, "softmax": _softmax, "reduce": _reduce, "nary": _nary,
            "island_avgpool": _island_avgpool}


class HostKernels:
    def __init__(self, so_path: str):
        self.lib = ctypes.CDLL(os.path.abspath(so_path))

    def run(self, spec: dict, params: np.ndarray, xs: list) -> np.ndarray:
        """xs: the inputs' HWC bytes (uint8 views of int8); returns the output's HWC bytes."""
        op, o = spec["op"], spec["out"]
        bind = BINDINGS.get(op)
        if bind is None:
            raise ValueError(f"host fallback: no kernel for op '{op}'")
        p = {s: np.frombuffer(params, dtype=np.dtype(v["dtype"]).newbyteorder("<"),
                              count=v["count"], offset=v["offset"]).astype(v["dtype"])
             for s, v in spec["params"].items()}
        chw = [self._to_chw(x, t) for x, t in zip(xs, spec["inputs"])]
        out = np.zeros(o["size"], np.int8)
        bind(self.lib, spec, p, chw, out)
        return self._to_hwc(out, o).view(np.uint8)

    @staticmethod
    def _to_chw(x: np.ndarray, t: dict) -> np.ndarray:
        x = x.view(np.int8)
        if t["hwc"]:
            x = x.reshape(t["h"], t["w"], t["c"]).transpose(2, 0, 1)
        return np.ascontiguousarray(x).reshape(-1)

    @staticmethod
    def _to_hwc(y: np.ndarray, t: dict) -> np.ndarray:
        if t["hwc"]:
            y = y.reshape(t["c"], t["h"], t["w"]).transpose(1, 2, 0)
        return np.ascontiguousarray(y).reshape(-1)


def host_runner(build_dir: str):
    """run(layer entry, input byte arrays) for the runner, or None without host layers."""
    so = os.path.join(build_dir, "host", "nn_host.so")
    if not os.path.isfile(so):
        return None
    k = HostKernels(so)

    def run(layer, xs):
        cname = layer["cname"]
        with open(os.path.join(build_dir, "src", "layers", cname + "_host.json")) as f:
            spec = json.load(f)
        params = np.fromfile(binfiles.bin_path(build_dir, "weights", cname), dtype=np.uint8)
        return k.run(spec, params, xs)
    return run
