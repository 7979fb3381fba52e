"""ISA plug-ins of the BRGEMM kernel generator.

An ISA turns one microkernel description (`Micro`) into C: a function computing an
mr x (nv * 8) output block (mr pixels, nv vectors of 8 output channels) over the whole
batch-reduced K (taps x channel pairs), followed by the fused epilogue.  Every plug-in
reads the same prepacked weights (see kernelgen.pack_weights: per panel of NR channels,
[K/2][NR][2] int8) and the same zero-point-padded int16 activations, so a layer holds
several variants and picks one at run time.

To add an ISA, subclass `Isa`: `guard` (preprocessor condition under which
the code compiles), `attr` (per-function target attribute), `runtime` (C expression: the
CPU can run it), `lanes` (output channels per accumulator register: the register
budget counts nr / lanes of them per pixel), and
`microkernel()`.  Register it in ISAS only once a machine or emulator can run its tests.

The plug-ins: Portable here, the x86-64 ones in isa_x86, the Arm ones in isa_arm; their
interface (Micro, Isa) in microkernel.
"""
from __future__ import annotations

from .isa_arm import Dotprod, I8mm, Neon
from .isa_x86 import Avx2, Avx2U8, Avx512Vnni, Avx512Vnni512, AvxVnni
from .microkernel import Isa, Micro, k_loops  # noqa: F401  (Micro: the callers' microkernel description)


class Portable(Isa):
    """C99, any CPU: the reference the other variants are tested against."""
    name = "portable"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        n = mk.nv * 8
        out = [f"static void {fname}(const int16_t *const *a, const int8_t *w, const nn_epi_t *e, int8_t *out, int last, const int8_t *res)",
               "{"]
        out += [f"    const int16_t *a{m} = a[{m}];" for m in range(mk.mr)]
        out.append(f"    int32_t c[{mk.mr}][{n}];")
        out.append("    memset(c, 0, sizeof c);")

        def body(k):
            s = []
            for m in range(mk.mr):
                s.append(f"{{ const int32_t x0 = p{m}[2 * ({k})], x1 = p{m}[2 * ({k}) + 1];")
                s.append(f"  for (int j = 0; j < {n}; ++j) c[{m}][j] += x0 * w[2 * j] + x1 * w[2 * j + 1]; }}")
            s.append(f"w += {mk.nr * 2};")
            return s
        out += k_loops(mk, body, tapoff)
        if not mk.res:
            out.append("    (void)res;")
        for m in range(mk.mr):
            out.append(f"    for (int j = 0; j < {(mk.nv - 1) * 8} + last; ++j)")
            q = (f"nn_requantize((int64_t)c[{m}][j] + e->bias[j], "
                 "e->mult[j], e->shift[j], e->zp, e->act_min, e->act_max)")
            if mk.res:
                q = f"nn_res_add({q}, res[{m * mk.ostride} + j], e->res)"
            out.append(f"        out[{m * mk.ostride} + j] = {q};")
        out.append("}")
        return "\n".join(out) + "\n"


ISAS = {"portable": Portable(), "avx2": Avx2(), "avx2u8": Avx2U8(), "avx512vnni": Avx512Vnni(),
        "avx512vnni512": Avx512Vnni512(), "avxvnni": AvxVnni(), "neon": Neon(), "dotprod": Dotprod(), "i8mm": I8mm()}
# Register-file budget of the blocking search: accumulators + weight vectors + 1 broadcast.
REGISTERS = {"portable": 16, "avx2": 16, "avx2u8": 16, "avx512vnni": 32, "avx512vnni512": 32, "avxvnni": 16,
             "neon": 32, "dotprod": 32, "i8mm": 32}
