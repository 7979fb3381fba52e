"""ISA plug-ins of the BRGEMM kernel generator.

An ISA turns one microkernel description (`Micro`) into C: a function computing an
mr x (nv * 8) output block (mr pixels, nv vectors of 8 output channels) over the whole
batch-reduced K (taps x channel pairs), followed by the fused epilogue.  Every plug-in
reads the same prepacked weights (see kernelgen.pack_weights: per panel of NR channels,
[K/2][NR][2] int8) and the same zero-point-padded int16 activations, so a layer holds
several variants and picks one at run time.

To add an ISA (e.g. AVX-VNNI `vpdpbusd` with the unsigned-offset correction folded into
the bias, or NEON SDOT/SMMLA), subclass `Isa`: `guard` (preprocessor condition under which
the code compiles), `attr` (per-function target attribute), `runtime` (C expression: the
CPU can run it), `lanes` (output channels per vector: NR is a multiple of it), and
`microkernel()`.  Register it in ISAS only once a machine or emulator can run its tests.
"""
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


def _k_loops(mk: Micro, body, tapoff: str) -> list:
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


class Portable(Isa):
    """C99, any CPU: the reference the other variants are tested against."""
    name = "portable"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        n = mk.nv * 8
        out = [f"static void {fname}(const int16_t *const *a, const int8_t *w, const nn_epi_t *e, int8_t *out, int last)",
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
        out += _k_loops(mk, body, tapoff)
        for m in range(mk.mr):
            out.append(f"    for (int j = 0; j < {(mk.nv - 1) * 8} + last; ++j)")
            out.append(f"        out[{m * mk.ostride} + j] = nn_requantize((int64_t)c[{m}][j] + e->bias[j], "
                       "e->mult[j], e->shift[j], e->zp, e->act_min, e->act_max);")
        out.append("}")
        return "\n".join(out) + "\n"


class Avx2(Isa):
    """x86-64 AVX2: int8 weights sign-extended to int16 (vpmovsxbw), activation pairs
    broadcast, exact int16 x int16 pair sums (vpmaddwd: |x|, |w| <= 128, so a pair
    never reaches the one saturating case -32768 * -32768 * 2)."""
    name = "avx2"
    guard = "NN_HAVE_X86"
    attr = "NN_AVX2 "
    runtime = "nn_cpu_has_avx2()"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        out = [f"static {self.attr}void {fname}(const int16_t *const *a, const int8_t *w, const nn_epi_t *e, int8_t *out, int last)",
               "{"]
        out += [f"    const int16_t *a{m} = a[{m}];" for m in range(mk.mr)]
        for m in range(mk.mr):
            out.append("    __m256i " + ", ".join(f"c{m}_{v} = _mm256_setzero_si256()" for v in range(mk.nv)) + ";")

        def body(k):
            s = ["{"]
            for v in range(mk.nv):
                s.append(f"    const __m256i w{v} = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(w + {v * 16})));")
            for m in range(mk.mr):
                s.append(f"    const __m256i b{m} = _mm256_set1_epi32(nn_load_pair(p{m} + 2 * ({k})));")
                for v in range(mk.nv):
                    s.append(f"    c{m}_{v} = _mm256_add_epi32(c{m}_{v}, _mm256_madd_epi16(b{m}, w{v}));")
            s.append(f"    w += {mk.nr * 2};")
            # opaque to the optimizer: keeps every accumulator in its register and stops
            # gcc from reassociating unrolled steps into extra temporaries (spills)
            accs = [f"c{m}_{v}" for m in range(mk.mr) for v in range(mk.nv)]
            s.append('    __asm__("" : ' + ", ".join(f'"+x"({a})' for a in accs) + ");")
            s.append("}")
            return s
        out += _k_loops(mk, body, tapoff)
        for m in range(mk.mr):
            for v in range(mk.nv):
                cnt = "last" if v == mk.nv - 1 else "8"
                out.append(f"    nn_avx2_store8(out + {m * mk.ostride + v * 8}, nn_avx2_requant8(c{m}_{v}, e, {v}), {cnt});")
        out.append("}")
        return "\n".join(out) + "\n"


ISAS = {"portable": Portable(), "avx2": Avx2()}
# Register-file budget of the blocking search: accumulators + weight vectors + 1 broadcast.
REGISTERS = {"portable": 16, "avx2": 16}
