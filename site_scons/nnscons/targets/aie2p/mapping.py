"""Which layers map onto the AIE array, as what.

Every mapped layer is one tiled matrix product out[t][c] = sum_k A[t][k] * W[k][c]: t an
output pixel ("tile", as in mlir-aie's conv2d_14x14), k a position in its input window in
(ky, kx, ci) order, c an output channel. The DMAs do the im2col: a window row is kw*Cin
contiguous bytes of the HWC input, so 8-byte k-groups never straddle two rows when
kw*Cin is a multiple of 8.

Maps: Conv (groups 1, dilation 1; any kernel, stride and padding, asymmetric too) and
Linear. The layer's input is *staged* in DDR (see stage()): zero-padded by the Conv's
pads and, when kw*Cin or a row is not a whole number of 8-byte groups / 32-bit words,
with zero channels appended (Cin=1 or 3 first layers: Cp=8; the weights of the added
channels are 0). Padded taps then read raw 0 instead of the input zero point; the kernel
corrects that exactly with a per-border-class bias (pack.py). Output channels are padded
to a multiple of 8 in DDR (zero weights) and dropped by the runner.

Why DDR staging and not the memtile's zero padding: aie2p memtile MM2S BDs can pad
(mlir-aie `padDimensions` / `bd_pad_layout`: memtile MM2S only, dimensions 0..2, the
innermost in whole 32-bit words), but a pad is a hyper-rectangle in the *pattern's* index
space, while an im2col window is padded where oy*sh + ky (resp. ox*sw + kx) leaves the
image -- a condition on a sum of two pattern indices, which no per-dimension pad can
express. The runner stages every layer's input through host memory anyway (one xclbin
per layer), so writing it zero-padded costs nothing more.

Flatten/Reshape is a host-side view: a flattened CxHxW tensor keeps its HWC bytes (its
golden too, tensor_layouts), and the Linear reading it has its weight columns permuted
to HWC order at pack time.
"""
from __future__ import annotations

from ... import ops
from ...errors import UserError
from ..base import flattened_from, flattened_layouts  # noqa: F401  (HWC: Flatten is a view)

MAPPED = "Conv (groups 1, dilation 1), Linear, Flatten/Reshape (a host-side view)"


def _staged_channels(C: int, kw: int, Wp: int) -> int:
    """Fewest channels >= C with kw*Cp a multiple of 8 and a padded row of whole words."""
    cp = C
    while (kw * cp) % 8 or (Wp * cp) % 4:
        cp += 1
    return cp


def geometry(layer, graph) -> dict:
    """The layer as a tiled matmul over an HWC input: H W C -> OH OW O, window kh x kw,
    pads pt pl pb pr; staged in DDR as Hp x Wp x Cp, output written with Op channels."""
    src, dst = graph.tensor(layer.inputs[0]).shape, graph.tensor(layer.output).shape
    if not ops.has_window(layer):          # a Linear: one pixel of its flattened input
        o, k = layer.weight.shape
        g = dict(H=1, W=1, C=k, OH=1, OW=1, O=o, kh=1, kw=1, sh=1, sw=1, pt=0, pl=0, pb=0, pr=0)
    else:
        a = layer.attrs
        pt, pl, pb, pr = (int(p) for p in a.get("pads", (0, 0, 0, 0)))
        g = dict(H=src[2], W=src[3], C=src[1], OH=dst[2], OW=dst[3], O=dst[1],
                 kh=a["kernel"][0], kw=a["kernel"][1], sh=a["stride"][0], sw=a["stride"][1],
                 pt=pt, pl=pl, pb=pb, pr=pr)
    g["Hp"], g["Wp"] = g["H"] + g["pt"] + g["pb"], g["W"] + g["pl"] + g["pr"]
    g["Cp"] = _staged_channels(g["C"], g["kw"], g["Wp"])
    g["Op"] = -(-g["O"] // 8) * 8
    return g


def border_classes(size: int, out: int, k: int, s: int, pad_before: int):
    """Per output position along one axis, which kernel taps [lo, hi) fall inside the
    input. Returns (per-position class index, [(lo, hi) per class]); classes in order of
    first appearance, so an unpadded axis has the one class (0, k)."""
    spans, idx = [], []
    for o in range(out):
        start = o * s - pad_before
        span = (max(0, -start), min(k, size - start))
        if span not in spans:
            spans.append(span)
        idx.append(spans.index(span))
    return idx, spans


def classes(g: dict) -> dict:
    """The layer's border classes: class = row class * n col classes + col class."""
    rows, rspans = border_classes(g["H"], g["OH"], g["kh"], g["sh"], g["pt"])
    cols, cspans = border_classes(g["W"], g["OW"], g["kw"], g["sw"], g["pl"])
    return {"row": rows, "col": cols, "row_spans": rspans, "col_spans": cspans,
            "n": len(rspans) * len(cspans)}


def _conv_why_not(layer, graph):
    a = layer.attrs
    if a.get("groups", 1) != 1:
        return f"grouped/depthwise Conv (groups={a['groups']}) does not map"
    if tuple(a.get("dilation", (1, 1))) != (1, 1):
        return f"dilated Conv (dilation={tuple(a['dilation'])}) does not map"
    return None


# the NPU's op table: op -> (layer, graph) -> None if the layer maps, else why not (the
# design and kernels are layerplan.py's); an alias (Flatten/Reshape) is a host-side view
NPU_OPS = {"conv2d": _conv_why_not, "linear": lambda layer, graph: None}


def why_not(layer, graph):
    """None if the layer maps, else the reason it does not."""
    if ops.get(layer.op).alias:
        return None
    check = NPU_OPS.get(layer.op)
    if check is None:
        return f"op '{layer.op}' has no AIE kernel here; mapped ops: {MAPPED}"
    return check(layer, graph)


def check(graph) -> None:
    """Every layer that does not map, in one error: each named, with the reason."""
    bad = [(layer, why_not(layer, graph)) for layer in graph.layers]
    bad = [(layer, r) for layer, r in bad if r]
    if bad:
        lines = [f"layer '{l.name}' ({'+'.join(l.source_ops) or l.op}) does not map onto target "
                 f"kind 'aie2p': {r}" for l, r in bad]
        raise UserError("\n".join(lines) + "\n(to run them on the host CPU with the host "
                        "target's C kernels, set mapping: {fallback: host} on the aie2p target)")
