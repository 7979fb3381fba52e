"""The x86-64 plug-ins: AVX2 (int16 pairs, vpmaddwd), its exact vpmaddubsw variant on the u8
buffer (avx2u8), AVX-512 VNNI (vpdpbusd on 256-bit vectors: avx512vnni, on 512-bit ones:
avx512vnni512) and AVX-VNNI (the VEX vpdpbusd on 256-bit vectors, 16 registers: avxvnni)."""
from __future__ import annotations

from .microkernel import Isa, Micro, k_loops


class Avx2(Isa):
    """x86-64 AVX2: int8 weights sign-extended to int16 (vpmovsxbw), activation pairs
    broadcast, exact int16 x int16 pair sums (vpmaddwd: |x|, |w| <= 128, so a pair
    never reaches the one saturating case -32768 * -32768 * 2)."""
    name = "avx2"
    guard = "NN_HAVE_X86"
    attr = "NN_AVX2 "
    runtime = "nn_cpu_has_avx2()"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        out = [f"static {self.attr}void {fname}(const int16_t *const *a, const int8_t *w, const nn_epi_t *e, int8_t *out, int last, const int8_t *res)",
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
        out += k_loops(mk, body, tapoff)
        out += _avx2_epilogue(mk, lambda m, v: f"c{m}_{v}")
        out.append("}")
        return "\n".join(out) + "\n"


_REQUANT8 = {"f64": "nn_avx2_requant8_f64", "f64c": "nn_avx2_requant8_f64c",
             "tfl": "nn_avx2_tfl8", "tfl64": "nn_avx2_requant8"}
# the conv's own codes before a fused TFLite ADD, by its rule
_TFL_CODES8 = {"tfl": "nn_avx2_mbqm8_pc", "tfl64": "nn_avx2_requant8_lanes"}


# the same epilogues to int32 lanes (stored 16 or 32 channels at a time: nn_avx2_store16/32)
_REQUANT8_I32 = {"f64": "nn_avx2_requant8_f64_i32({a}, e, {v})", "f64c": "nn_avx2_requant8_f64c_i32({a}, e, {v})",
                 "tfl": "nn_avx2_mbqm8_pc(nn_avx2_biased8({a}, e, {v}), e, {v})",
                 "tfl64": "nn_avx2_requant8_i32({a}, e, {v})"}


def _avx2_fma_epilogue(mk: Micro, acc) -> list:
    """The double epilogues (f64, f64c), where the panel's shifts and MXCSR allow it: the
    exact fma requantization (nn_avx2_fma8; with a fused add not TFLite's, nn_avx2_fma_res8),
    a pixel's vectors stored 16 channels at a time (the last two too when `last` is 8).
    Decided once per call."""
    if mk.res:
        out = ["    if (e->fma && !e->res->tfl && nn_mxcsr_nearest()) {",
               "        nn_avx2_fres_t fc;",
               "        const __m256i zp16 = _mm256_set1_epi16((short)e->res->e.zp);",
               "        nn_avx2_fres_init(&fc, e, e->res);"]
    else:
        out = ["    if (e->fma && nn_mxcsr_nearest()) {",
               "        const __m256d big = _mm256_set1_pd(0x1.8p52), lo = _mm256_set1_pd(0x1.8p52 + e->dlo),"
               " hi = _mm256_set1_pd(0x1.8p52 + e->dhi);",
               "        const __m256i zp16 = _mm256_set1_epi16((short)e->zp);"]
    for m in range(mk.mr):
        def q(v, cnt="8", m=m):
            if mk.res:
                return f"nn_avx2_fma_res8({acc(m, v)}, e, {v}, res + {m * mk.ostride + v * 8}, {cnt}, &fc)"
            return f"nn_avx2_fma8({acc(m, v)}, e, {v}, big, lo, hi)"

        def st16(v, ind="        ", m=m):
            return f"{ind}nn_avx2_fma_store16(out + {m * mk.ostride + v * 8}, {q(v)}, {q(v + 1)}, zp16);"

        def st8(v, cnt, ind="        ", m=m):
            return f"{ind}nn_avx2_fma_store8(out + {m * mk.ostride + v * 8}, {q(v, cnt)}, {cnt}, zp16);"
        v = 0
        while mk.nv - 1 - v >= 2:        # full pairs before the last two vectors
            out.append(st16(v))
            v += 2
        if mk.nv - v == 2:               # the last pair: whole when `last` is 8
            out += ["        if (last == 8)", st16(v, "            "), "        else {",
                    st8(v, "8", "            "), st8(v + 1, "last", "            "), "        }"]
        else:
            out.append(st8(v, "last"))
    return out + ["        return;", "    }"]


def _avx2_epilogue(mk: Micro, acc, fma: bool = True) -> list:
    """Requantize (and add the fused residual), store: acc(m, v) is the int32 vector
    expression of pixel m, channels v*8..v*8+7.  Without a residual, a pixel's full vectors
    (all but the last, whose valid count `last` is known at run time only) are stored four
    or two at a time, the last two together when `last` is 8; the double epilogues first
    try the fma one (fma: False where the caller's AVX-512 one was tried)."""
    out = [] if mk.res else ["    (void)res;"]
    if fma and mk.epilogue in ("f64", "f64c"):
        out += _avx2_fma_epilogue(mk, acc)
    for m in range(mk.mr):
        v0 = 0
        if not mk.res:
            while mk.nv - 1 - v0 >= 2:
                n = 4 if mk.nv - 1 - v0 >= 4 else 2
                rs = ", ".join(_REQUANT8_I32[mk.epilogue].format(a=acc(m, v), v=v) for v in range(v0, v0 + n))
                out.append(f"    nn_avx2_store{n * 8}(out + {m * mk.ostride + v0 * 8}, {rs});")
                v0 += n
        pair = not mk.res and mk.nv - v0 == 2
        if pair:     # the last pair: 16 channels in one store when `last` is 8, else the two below
            rs = ", ".join(_REQUANT8_I32[mk.epilogue].format(a=acc(m, v), v=v) for v in (v0, v0 + 1))
            out += ["    if (last == 8) {", f"        nn_avx2_store16(out + {m * mk.ostride + v0 * 8}, {rs});",
                    "    } else {"]
        for v in range(v0, mk.nv):
            cnt = "last" if v == mk.nv - 1 else "8"
            off = m * mk.ostride + v * 8
            if mk.res and mk.epilogue in _TFL_CODES8:
                codes = f"{_TFL_CODES8[mk.epilogue]}(nn_avx2_biased8({acc(m, v)}, e, {v}), e, {v})"
                q = f"nn_avx2_tfl_res8({codes}, res + {off}, {cnt}, e->res)"
            elif mk.res:
                checked = int(mk.epilogue != "f64")
                q = f"nn_avx2_requant_res8({acc(m, v)}, e, {v}, {checked}, res + {off}, {cnt}, e->res)"
            else:
                q = f"{_REQUANT8[mk.epilogue]}({acc(m, v)}, e, {v})"
            out.append(f"    {'    ' if pair else ''}nn_avx2_store8(out + {off}, {q}, {cnt});")
        if pair:
            out.append("    }")
    return out


def _vnni_epilogue(mk: Micro, acc) -> list:
    """The AVX-512 variants' epilogue: where the panel's shifts allow it (e->fma, set by
    nn_epi_init) the exact fma requantization (nn_vnni_requant8: five instructions per 8
    channels; a pixel's vectors stored 16 channels at a time, the last two too when the
    call site's `last` is 8, clamped to bounds held in registers), else the AVX2 one.
    Decided once per call; a fused residual add (not TFLite's) follows it in the same
    registers (nn_vnni_requant_res8)."""
    if mk.epilogue not in ("f64", "f64c"):
        return _avx2_epilogue(mk, acc)
    out = ["    if (e->fma) {"] + ([] if mk.res else ["        (void)res;"])
    clamp = "e->res->e" if mk.res else "(*e)"     # the add's clamp where one is fused
    out.append(f"        const __m128i lo8 = _mm_set1_epi8((char){clamp}.act_min), hi8 = _mm_set1_epi8((char){clamp}.act_max);")
    for m in range(mk.mr):
        def q(v, cnt, m=m):
            if not mk.res:
                return f"nn_vnni_requant8({acc(m, v)}, e, {v})"
            return (f"nn_vnni_requant_res8({acc(m, v)}, e, {v}, "
                    f"nn_vnni_load8(res + {m * mk.ostride + v * 8}, {cnt}), e->res)")
        def st16(v, ind="        "):
            return f"{ind}nn_vnni_store16c(out + {m * mk.ostride + v * 8}, {q(v, '8')}, {q(v + 1, '8')}, lo8, hi8);"
        def st8(v, cnt, ind="        "):
            return f"{ind}nn_vnni_store8c(out + {m * mk.ostride + v * 8}, {q(v, cnt)}, {cnt}, lo8, hi8);"
        v = 0
        while mk.nv - 1 - v >= 2:        # full pairs before the last two vectors
            out.append(st16(v))
            v += 2
        if mk.nv - v == 2:               # the last pair: whole when `last` is 8 (a constant per call site)
            out += ["        if (last == 8)", st16(v, "            "), "        else {",
                    st8(v, "8", "            "), st8(v + 1, "last", "            "), "        }"]
        else:
            out.append(st8(v, "last"))
    out.append("        return;")
    out.append("    }")
    return out + _avx2_epilogue(mk, acc, fma=False)


def _u8_head(isa, mk: Micro, fname: str) -> list:
    """The signature and pixel pointers of a microkernel on the u8 buffer (avx2u8,
    avx512vnni): xo/nx list a panel's correction quads (avx2u8's only)."""
    return [f"static {isa.attr}void {fname}(const uint8_t *const *a, const int8_t *w, const nn_epi_t *e, "
            "int8_t *out, int last, const int8_t *res, const int32_t *xo, int nx)",
            "{"] + [f"    const uint8_t *a{m} = a[{m}];" for m in range(mk.mr)]


def _u8_weights(mk: Micro) -> list:
    """The nv weight vectors of one quad step: 8 channels x 4 int8 each."""
    return [f"    const __m256i w{v} = _mm256_loadu_si256((const __m256i *)(const void *)(w + {v * 32}));"
            for v in range(mk.nv)]


def _pin(accs: list, constraint: str) -> list:
    """Keeps every accumulator in its register (as in Avx2): gcc takes at most 30
    operands per asm, an in-out one counts twice."""
    return ['    __asm__("" : ' + ", ".join(f'"+{constraint}"({a})' for a in accs[i:i + 15]) + ");"
            for i in range(0, len(accs), 15)]


def _u8_loops(mk: Micro, body, tapoff: str) -> list:
    return [ln.replace("const int16_t *p", "const uint8_t *p") for ln in k_loops(mk, body, tapoff)]


class Avx2U8(Avx2):
    """x86-64 AVX2 with u8 x s8 `vpmaddubsw`, exact by proof.  Activations are x + 128 (u8,
    kernelgen.fill_u8), weights are packed per panel as [K/4][NR][4] (kernelgen.pack_u8):
    one broadcast of 4 activations and one 32-byte load of 8 channels x 4 weights feed one
    vpmaddubsw (32 products).  Its int16 pair sums x0*w0 + x1*w1 are exact only when they
    cannot saturate: kernelgen.pack_u8 splits the weights W = A + B so that every packed
    pair of A and of B has a positive part <= 128 and a negative part <= 128 (255 * 128
    fits int16) and checks it (kernelgen.u8_pairs_safe); B is nonzero in few quads, which
    each panel lists (`xo`, `nx`: their offsets in the pixel's window) and runs after the
    main K loop with their weights after the panel's.

    The pair sums are widened by `vpmaddwd` with ones (exact: two int16 into int32) and
    added: three operations per 32 MACs, two of them multiplies.  On an AMD Zen 3 (two
    vector multiply pipes) independent chains of that run at 98 GMAC/s against 82 for the
    int16 path's vpmaddwd + vpaddd and 82 for the widening without a second multiply this
    variant had before (xor, add, shift, add: built for Zen 1's single multiply pipe).  The
    unsigned offset, -128 * sum(w), is in the variant's bias (kernelgen.bias_u8)."""
    name = "avx2u8"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        out = _u8_head(self, mk, fname)
        out.append("    const __m256i ones = _mm256_set1_epi16(1);")
        for m in range(mk.mr):
            out.append("    __m256i " + ", ".join(f"c{m}_{v} = _mm256_setzero_si256()" for v in range(mk.nv)) + ";")
        accs = [f"c{m}_{v}" for m in range(mk.mr) for v in range(mk.nv)]

        def body(k):
            s = ["{"] + _u8_weights(mk)
            for m in range(mk.mr):
                s.append(f"    const __m256i b{m} = _mm256_set1_epi32(nn_load_quad(p{m} + 4 * ({k})));")
                for v in range(mk.nv):
                    s.append(f"    c{m}_{v} = _mm256_add_epi32(c{m}_{v}, _mm256_madd_epi16(_mm256_maddubs_epi16(b{m}, w{v}), ones));")
            s.append(f"    w += {mk.nr * 4};")
            return s + _pin(accs, "x") + ["}"]
        out += _u8_loops(mk, body, tapoff)
        # the correction quads of this panel (B's nonzero ones), after the main K loop
        out.append("    for (int j = 0; j < nx; ++j) {")
        out += [f"        const uint8_t *p{m} = a{m} + xo[j];" for m in range(mk.mr)]
        out += ["    " + ln for ln in body("0")]
        out.append("    }")
        out += _avx2_epilogue(mk, lambda m, v: f"c{m}_{v}")
        out.append("}")
        return "\n".join(out) + "\n"


class Avx512Vnni(Isa):
    """x86-64 AVX-512 VNNI (with VL) on 256-bit vectors: `vpdpbusd`, u8 x s8 products
    summed four at a time straight into int32 lanes with no intermediate saturation, so
    exact for every weight.  It reads the avx2u8 variant's buffer (x + 128 as u8,
    kernelgen.fill_u8) and weights packed per panel as [K/4][NR][4] with no split
    (kernelgen.pack_u8(split=False)); the unsigned offset, -128 * sum(w), is folded into
    its bias (kernelgen.bias_u8, no steps).  int32 accumulation wraps, exact because the
    true value fits (kernelgen.vector_safe).  256-bit vectors keep the AVX2 epilogue and
    the 8-channel edge structure; AVX-512 gives 32 registers, so blockings up to 20
    accumulators (kernelgen.vnni_blocking)."""
    name = "avx512vnni"
    guard = "NN_HAVE_X86"
    attr = "NN_VNNI "
    runtime = "nn_cpu_has_avx512vnni()"
    epilogue = staticmethod(_vnni_epilogue)

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        out = _u8_head(self, mk, fname)
        out.append("    (void)xo; (void)nx;   /* no correction quads: vpdpbusd never saturates */")
        for m in range(mk.mr):
            out.append("    __m256i " + ", ".join(f"c{m}_{v} = _mm256_setzero_si256()" for v in range(mk.nv)) + ";")
        accs = [f"c{m}_{v}" for m in range(mk.mr) for v in range(mk.nv)]

        def body(k):
            s = ["{"] + _u8_weights(mk)
            for m in range(mk.mr):
                s.append(f"    const __m256i b{m} = _mm256_set1_epi32(nn_load_quad(p{m} + 4 * ({k})));")
                for v in range(mk.nv):
                    s.append(f"    c{m}_{v} = _mm256_dpbusd_epi32(c{m}_{v}, b{m}, w{v});")
            s.append(f"    w += {mk.nr * 4};")
            return s + _pin(accs, "v") + ["}"]    # "v": any of the 32 registers
        out += _u8_loops(mk, body, tapoff)
        out += self.epilogue(mk, lambda m, v: f"c{m}_{v}")
        out.append("}")
        return "\n".join(out) + "\n"


class AvxVnni(Avx512Vnni):
    """x86-64 AVX-VNNI: the VEX-encoded `vpdpbusd` on 256-bit vectors (Intel since Alder
    Lake, AMD since Zen 5), for CPUs with it and without AVX-512: the same buffer, weights,
    bias and exactness as avx512vnni, but only 16 registers (kernelgen.vnni_blocking's
    search for it counts them) and a function target without AVX-512, so the compiler
    cannot pick the EVEX form or a register above ymm15."""
    name = "avxvnni"
    guard = "NN_HAVE_X86 && NN_HAVE_AVXVNNI"
    attr = "NN_AVXVNNI "
    runtime = "nn_cpu_has_avxvnni()"
    epilogue = staticmethod(_avx2_epilogue)     # no AVX-512: the AVX2 epilogue

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        return (super().microkernel(mk, fname, tapoff)
                .replace("_mm256_dpbusd_epi32(", "_mm256_dpbusd_avx_epi32(").replace('"+v"(', '"+x"('))


class Avx512Vnni512(Avx512Vnni):
    """x86-64 AVX-512 VNNI on 512-bit vectors: one vpdpbusd = 64 MACs, 16 output channels
    per zmm accumulator (its blockings' nr are multiples of 16; a panel with an odd count
    of 8-channel groups, an edge or a forced nr, keeps its last one in a ymm).  The weights are avx512vnni's [K/4][NR][4] (16
    channels x 4 = one 64-byte load), its buffer and bias too.  The epilogue splits each
    zmm into its two 256-bit halves and runs the AVX2 one on each (the channels' order is
    the weights'), so the requantization is the other variants' exactly.  On Zen 4 a zmm
    op occupies both 256-bit halves of a pipe (no more MACs per cycle than ymm); on Zen 5
    and Intel's AVX-512 cores it is twice ymm's."""
    name = "avx512vnni512"
    runtime = "nn_cpu_has_avx512vnni()"
    lanes = 16

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        nz, tail = mk.nv // 2, mk.nv % 2      # zmm accumulators per pixel, + a ymm one
        out = _u8_head(self, mk, fname)
        out.append("    (void)xo; (void)nx;   /* no correction quads: vpdpbusd never saturates */")
        accs = []
        for m in range(mk.mr):
            if nz:
                out.append("    __m512i " + ", ".join(f"c{m}_{z} = _mm512_setzero_si512()" for z in range(nz)) + ";")
            if tail:
                out.append(f"    __m256i t{m} = _mm256_setzero_si256();")
            accs += [f"c{m}_{z}" for z in range(nz)] + ([f"t{m}"] if tail else [])

        def body(k):
            s = ["{"]
            s += [f"    const __m512i w{z} = _mm512_loadu_si512((const void *)(w + {z * 64}));" for z in range(nz)]
            if tail:
                s.append(f"    const __m256i wt = _mm256_loadu_si256((const __m256i *)(const void *)(w + {nz * 64}));")
            for m in range(mk.mr):
                s.append(f"    const int32_t q{m} = nn_load_quad(p{m} + 4 * ({k}));")
                for z in range(nz):
                    s.append(f"    c{m}_{z} = _mm512_dpbusd_epi32(c{m}_{z}, _mm512_set1_epi32(q{m}), w{z});")
                if tail:
                    s.append(f"    t{m} = _mm256_dpbusd_epi32(t{m}, _mm256_set1_epi32(q{m}), wt);")
            s.append(f"    w += {mk.nr * 4};")
            return s + _pin(accs, "v") + ["}"]
        out += _u8_loops(mk, body, tapoff)

        def acc(m, v):
            if v // 2 >= nz:
                return f"t{m}"
            half = "_mm512_castsi512_si256({})" if v % 2 == 0 else "_mm512_extracti64x4_epi64({}, 1)"
            return half.format(f"c{m}_{v // 2}")
        out += _vnni_epilogue(mk, acc)
        out.append("}")
        return "\n".join(out) + "\n"
