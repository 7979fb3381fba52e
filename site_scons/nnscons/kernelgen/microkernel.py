"""The ISA plug-ins' interface: one microkernel's description (Micro), the plug-in base
(Isa), and the batch-reduce loop over taps and channel pairs they share (k_loops)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Micro:
    """One microkernel: mr pixels x nv vectors of 8 channels, panel width nr (channels),
    `last` (argument) valid channels in its last vector (8 unless the layer's channel
    count is not a multiple of 8), the K structure (per-tap element offsets into the int16 buffer, channel
    pairs per tap), the k-unroll and the output pixel stride."""
    mr: int
    nv: int
    nr: int
    taps: tuple
    pairs: int
    ku: int
    ostride: int
    res: bool = False       # the epilogue adds a residual (e->res, the `res` argument)
    # the requantization: "f64" exact in double (kernelgen.f64_safe), "f64c" double with the
    # near-tie check, "tfl" TFLite's MultiplyByQuantizedMultiplier in integers, "tfl64"
    # TFLite's double-precision rule (FULLY_CONNECTED: lane by lane, exact)
    epilogue: str = "f64c"

    def name(self, isa: str, prefix: str) -> str:
        return f"{prefix}_{isa}_m{self.mr}n{self.nv}"


class Isa:
    name = ""
    guard = "1"
    attr = ""
    runtime = "1"
    lanes = 8

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        raise NotImplementedError


def k_loops(mk: Micro, body, tapoff: str) -> list:
    """Lines of the batch-reduce loop: taps, then channel pairs unrolled by ku.
    body(kexpr) returns the lines of one pair step (it advances w)."""
    lines = []
    ind = "    "
    ptrs = [f"const int16_t *p{m} = a{m}" + (f" + {tapoff}[t]" if len(mk.taps) > 1 else "") + ";"
            for m in range(mk.mr)]
    if len(mk.taps) > 1:
        lines.append(f"{ind}for (int t = 0; t < {len(mk.taps)}; ++t) {{")
        ind += "    "
    else:
        lines.append(f"{ind}{{")
        ind += "    "
    lines += [ind + p for p in ptrs]
    ku = max(1, min(mk.ku, mk.pairs))
    lines.append(f"{ind}int k = 0;")
    if ku > 1 or mk.pairs > 1:
        lines.append(f"{ind}for (; k + {ku} <= {mk.pairs}; k += {ku}) {{")
        for u in range(ku):
            lines += [ind + "    " + s for s in body(f"k + {u}")]
        lines.append(f"{ind}}}")
        if mk.pairs % ku:
            lines.append(f"{ind}for (; k < {mk.pairs}; ++k) {{")
            lines += [ind + "    " + s for s in body("k")]
            lines.append(f"{ind}}}")
    else:
        lines += [ind + s for s in body("k")]
    lines.append(f"{ind}(void)k;")
    lines.append("    }")
    return lines
