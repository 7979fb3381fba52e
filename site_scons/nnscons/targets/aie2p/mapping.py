"""Which layers map onto the AIE array, as what.

Every mapped layer is one tiled matrix product out[t][c] = sum_k A[t][k] * W[k][c]: t an
output pixel ("tile", as in mlir-aie's conv2d_14x14), k a position in its input window in
(ky, kx, ci) order, c an output channel. The DMAs do the im2col: a window row is kw*Cin
contiguous bytes of the HWC input, so 8-byte k-groups never straddle two rows when
kw*Cin is a multiple of 8. Conv 1x1, 3x3, patch convs (kernel = stride, as conv2dk14)
and Linear map; padding does not (the DMAs would have to insert the input zero point,
not zeros). Flatten/Reshape maps as a host-side view when it moves no byte in HWC.
"""
from __future__ import annotations

from ...errors import UserError


def geometry(layer, graph) -> dict:
    """The layer as a tiled matmul over an HWC input: H W C -> OH OW O, window kh x kw."""
    src, dst = graph.tensor(layer.inputs[0]).shape, graph.tensor(layer.output).shape
    if layer.op == "linear":
        o, k = layer.weight.shape
        return dict(H=1, W=1, C=k, OH=1, OW=1, O=o, kh=1, kw=1, sh=1, sw=1)
    a = layer.attrs
    return dict(H=src[2], W=src[3], C=src[1], OH=dst[2], OW=dst[3], O=dst[1],
                kh=a["kernel"][0], kw=a["kernel"][1], sh=a["stride"][0], sw=a["stride"][1])


def why_not(layer, graph):
    """None if the layer maps, else the reason it does not."""
    if layer.op == "reshape":
        src = graph.tensor(layer.inputs[0]).shape
        if len(src) == 4 and src[2] * src[3] != 1 and src[1] != 1:
            return (f"Flatten of a {src[1]}x{src[2]}x{src[3]} tensor reorders bytes in the "
                    f"NPU's HWC layout; only flattening Cx1x1 maps (a host-side view)")
        return None
    if layer.op not in ("conv2d", "linear"):
        return (f"op '{layer.op}' has no AIE kernel here; mapped ops: Conv (groups 1, no "
                f"padding), Linear, Flatten of Cx1x1")
    if layer.op == "conv2d":
        a = layer.attrs
        if a.get("groups", 1) != 1:
            return f"grouped/depthwise Conv (groups={a['groups']}) does not map"
        if tuple(a.get("dilation", (1, 1))) != (1, 1):
            return f"dilated Conv (dilation={tuple(a['dilation'])}) does not map"
        if any(a.get("pads", (0, 0, 0, 0))):
            return (f"Conv padding {tuple(a['pads'])} does not map: the DMAs pad with zeros, "
                    f"not the input zero point; export the model with padding 0")
    g = geometry(layer, graph)
    if (g["kw"] * g["C"]) % 8:
        return (f"a window row of kw*Cin = {g['kw']}*{g['C']} bytes is not a multiple of 8, "
                f"so the 8x8x8 k-groups would straddle input rows")
    if g["O"] % 8:
        return f"{g['O']} output channels is not a multiple of 8 (the kernel's C8 blocks)"
    if g["W"] * g["C"] % 4:
        return f"an input row of {g['W'] * g['C']} bytes is not a whole number of 32-bit words"
    return None


def check(layer, graph) -> None:
    reason = why_not(layer, graph)
    if reason:
        raise UserError(f"layer '{layer.name}' ({'+'.join(layer.source_ops) or layer.op}) does "
                        f"not map onto target kind 'aie2p': {reason}")
