"""ISA plug-ins of the BRGEMM kernel generator.

An ISA turns one microkernel description (`Micro`) into C: a function computing an
mr x (nv * 8) output block (mr pixels, nv vectors of 8 output channels) over the whole
batch-reduced K (taps x channel pairs), followed by the fused epilogue.  Every plug-in
reads the same prepacked weights (see kernelgen.pack_weights: per panel of NR channels,
[K/2][NR][2] int8) and the same zero-point-padded int16 activations, so a layer holds
several variants and picks one at run time.

To add an ISA (e.g. AVX-VNNI, the VEX form of Avx512Vnni for CPUs without AVX-512),
subclass `Isa`: `guard` (preprocessor condition under which
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
        out += _k_loops(mk, body, tapoff)
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
        out += _k_loops(mk, body, tapoff)
        out += _avx2_epilogue(mk, lambda m, v: f"c{m}_{v}")
        out.append("}")
        return "\n".join(out) + "\n"


_REQUANT8 = {"f64": "nn_avx2_requant8_f64", "f64c": "nn_avx2_requant8_f64c",
             "tfl": "nn_avx2_tfl8", "tfl64": "nn_avx2_requant8"}
# the conv's own codes before a fused TFLite ADD, by its rule
_TFL_CODES8 = {"tfl": "nn_avx2_mbqm8_pc", "tfl64": "nn_avx2_requant8_lanes"}


def _avx2_epilogue(mk: Micro, acc) -> list:
    """Requantize (and add the fused residual), store: acc(m, v) is the int32 vector
    expression of pixel m, channels v*8..v*8+7."""
    out = [] if mk.res else ["    (void)res;"]
    for m in range(mk.mr):
        for v in range(mk.nv):
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
            out.append(f"    nn_avx2_store8(out + {off}, {q}, {cnt});")
    return out


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
    return [ln.replace("const int16_t *p", "const uint8_t *p") for ln in _k_loops(mk, body, tapoff)]


class Avx2U8(Avx2):
    """x86-64 AVX2 with u8 x s8 `vpmaddubsw`, exact by proof.  Activations are x + 128 (u8,
    kernelgen.fill_u8), weights are packed per panel as [K/4][NR][4] (kernelgen.pack_u8):
    one broadcast of 4 activations and one 32-byte load of 8 channels x 4 weights feed one
    vpmaddubsw (32 products; one multiply, where the int16 path needs two vpmaddwd).  Its
    int16 pair sums x0*w0 + x1*w1 are exact only when they cannot saturate:
    kernelgen.pack_u8 splits the weights W = A + B so that every packed pair of A and of B
    has a positive part <= 128 and a negative part <= 128 (255 * 128 fits int16) and
    checks it (kernelgen.u8_pairs_safe); B is nonzero in few quads, which each panel lists
    (`xo`, `nx`: their offsets in the pixel's window) and runs after the main K loop with
    their weights after the panel's.

    The pair sums are widened without a second multiply (vpmaddwd by ones would run on
    the same, single, multiply pipe of this machine, Zen 1): t' = t ^ 0x8000 makes the low
    half lo + 32768 (unsigned); d accumulates t' as int32 (65536 * hi + lo + 32768) and h
    accumulates hi = t >> 16 (arithmetic); at the end lo + hi summed over the steps is
    d - 65535 * h - 32768 * steps, the constant folded into the bias (bias_u8; all in
    wrapping int32, exact because the true value fits: kernelgen.vector_safe)."""
    name = "avx2u8"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        out = _u8_head(self, mk, fname)
        out.append("    const __m256i lo_bias = _mm256_set1_epi32(0x8000);")
        for m in range(mk.mr):
            out.append("    __m256i " + ", ".join(f"d{m}_{v} = _mm256_setzero_si256(), h{m}_{v} = _mm256_setzero_si256()"
                                               for v in range(mk.nv)) + ";")
        accs = [f"{x}{m}_{v}" for m in range(mk.mr) for v in range(mk.nv) for x in "dh"]

        def body(k):
            s = ["{"] + _u8_weights(mk)
            for m in range(mk.mr):
                s.append(f"    const __m256i b{m} = _mm256_set1_epi32(nn_load_quad(p{m} + 4 * ({k})));")
                for v in range(mk.nv):
                    # hi from t itself (the xor changes only the low half): two short
                    # chains after the multiply schedule better than one (measured)
                    s.append(f"    {{ const __m256i t = _mm256_maddubs_epi16(b{m}, w{v});")
                    s.append(f"      d{m}_{v} = _mm256_add_epi32(d{m}_{v}, _mm256_xor_si256(t, lo_bias));")
                    s.append(f"      h{m}_{v} = _mm256_add_epi32(h{m}_{v}, _mm256_srai_epi32(t, 16)); }}")
            s.append(f"    w += {mk.nr * 4};")
            return s + _pin(accs, "x") + ["}"]
        out += _u8_loops(mk, body, tapoff)
        # the correction quads of this panel (B's nonzero ones), after the main K loop
        out.append("    for (int j = 0; j < nx; ++j) {")
        out += [f"        const uint8_t *p{m} = a{m} + xo[j];" for m in range(mk.mr)]
        out += ["    " + ln for ln in body("0")]
        out.append("    }")
        out += _avx2_epilogue(mk, lambda m, v: f"_mm256_add_epi32(_mm256_sub_epi32(d{m}_{v}, _mm256_slli_epi32(h{m}_{v}, 16)), h{m}_{v})")
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
        out += _avx2_epilogue(mk, lambda m, v: f"c{m}_{v}")
        out.append("}")
        return "\n".join(out) + "\n"


def _neon_head(isa, mk: Micro, fname: str) -> list:
    out = [f"static {isa.attr}void {fname}(const int16_t *const *a, const int8_t *w, const nn_epi_t *e, int8_t *out, int last, const int8_t *res)",
           "{"]
    out += [f"    const int16_t *a{m} = a[{m}];" for m in range(mk.mr)]
    return out


def _neon_tail(mk: Micro, stores: list) -> list:
    """Spill the accumulators to c[mr][nv*8] and run the exact scalar epilogue."""
    n = mk.nv * 8
    out = [f"    int32_t c[{mk.mr}][{n}];"]
    out += ["    " + s for s in stores]
    out.append(f"    nn_epi_scalar(&c[0][0], {n}, {mk.mr}, {(mk.nv - 1) * 8} + last, e, out, {mk.ostride}, res);")
    out.append("}")
    return out


def _group_loops(mk: Micro, body, tapoff: str) -> list:
    """The batch-reduce loop in groups of 4 channel pairs (8 K values): taps, full groups,
    then one zero-padded tail group of pairs % 4 (both static).  body(k, rem) returns the
    lines of one group (rem 4: full) and advances w."""
    lines = []
    ind = "    "
    if len(mk.taps) > 1:
        lines.append(f"{ind}for (int t = 0; t < {len(mk.taps)}; ++t) {{")
    else:
        lines.append(f"{ind}{{")
    ind += "    "
    lines += [ind + f"const int16_t *p{m} = a{m}" + (f" + {tapoff}[t]" if len(mk.taps) > 1 else "") + ";"
              for m in range(mk.mr)]
    full = mk.pairs // 4
    if full:
        lines.append(f"{ind}for (int k = 0; k < {full * 4}; k += 4) {{")
        lines += [ind + "    " + s for s in body("k", 4)]
        lines.append(f"{ind}}}")
    if mk.pairs % 4:
        lines.append(f"{ind}{{")
        lines.append(f"{ind}    const int k = {full * 4};")
        lines += [ind + "    " + s for s in body("k", mk.pairs % 4)]
        lines.append(f"{ind}}}")
    lines.append("    }")
    return lines


def _weights(mk: Micro, v: int, rem: int, count: int = 4) -> list:
    """W{v}_{j}: the int8x16 of channel pair step j (8 channels x 2 K values), zero past rem."""
    return [f"const int8x16_t W{v}_{j} = " +
            (f"vld1q_s8(w + {j * mk.nr * 2 + v * 16});" if j < rem else "vdupq_n_s8(0);")
            for j in range(count)]


def _acts8(mk: Micro, m: int, k: str, rem: int) -> list:
    """x{m}: int8x8 of pixel m's 8 K values of the group (int16 buffer narrowed)."""
    if rem == 4:
        return [f"const int8x8_t x{m} = vmovn_s16(vld1q_s16(p{m} + 2 * ({k})));"]
    return [f"int16_t t{m}[8] = {{ 0 }};",
            f"memcpy(t{m}, p{m} + 2 * ({k}), {rem * 4});",
            f"const int8x8_t x{m} = vmovn_s16(vld1q_s16(t{m}));"]


class Neon(Isa):
    """Armv8.0 NEON (Cortex-A53, A72): int8 weights sign-extended to int16 (SXTL), the
    activation pair broadcast (DUP), widening int16 multiply-accumulates (SMLAL, SMLAL2)
    into per-(channel, K parity) int32 lanes, pairwise-added (ADDP) at the end: exact
    (int16 x int16 products, no int16 saturation)."""
    name = "neon"
    guard = "NN_HAVE_ARM64"
    attr = ""
    runtime = "nn_cpu_has_neon()"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        out = _neon_head(self, mk, fname)
        for m in range(mk.mr):
            out.append("    int32x4_t " + ", ".join(f"c{m}_{v}_{q} = vdupq_n_s32(0)" for v in range(mk.nv)
                                                  for q in range(4)) + ";")

        def body(k):
            s = ["{"]
            for v in range(mk.nv):
                s.append(f"    const int8x16_t w{v} = vld1q_s8(w + {v * 16});")
                s.append(f"    const int16x8_t wl{v} = vmovl_s8(vget_low_s8(w{v})), wh{v} = vmovl_high_s8(w{v});")
            for m in range(mk.mr):
                s.append(f"    const int16x8_t b{m} = vreinterpretq_s16_s32(vdupq_n_s32(nn_load_pair(p{m} + 2 * ({k}))));")
                for v in range(mk.nv):
                    s.append(f"    c{m}_{v}_0 = vmlal_s16(c{m}_{v}_0, vget_low_s16(wl{v}), vget_low_s16(b{m}));")
                    s.append(f"    c{m}_{v}_1 = vmlal_high_s16(c{m}_{v}_1, wl{v}, b{m});")
                    s.append(f"    c{m}_{v}_2 = vmlal_s16(c{m}_{v}_2, vget_low_s16(wh{v}), vget_low_s16(b{m}));")
                    s.append(f"    c{m}_{v}_3 = vmlal_high_s16(c{m}_{v}_3, wh{v}, b{m});")
            s.append(f"    w += {mk.nr * 2};")
            s.append("}")
            return s
        out += _k_loops(mk, body, tapoff)
        stores = []
        for m in range(mk.mr):
            for v in range(mk.nv):
                stores.append(f"vst1q_s32(&c[{m}][{v * 8}], vpaddq_s32(c{m}_{v}_0, c{m}_{v}_1));")
                stores.append(f"vst1q_s32(&c[{m}][{v * 8 + 4}], vpaddq_s32(c{m}_{v}_2, c{m}_{v}_3));")
        out += _neon_tail(mk, stores)
        return "\n".join(out) + "\n"

    def macs_per_instruction(self, mk: Micro) -> float:
        macs = mk.mr * mk.nv * 16                     # per channel-pair step
        insns = mk.nv * 3 + mk.mr * 2 + 4 * mk.mr * mk.nv + 1
        return macs / insns


class Dotprod(Isa):
    """Armv8.2 dotprod (Cortex-A55, A76, Neoverse N1): SDOT by element, 4-deep int8 dot
    products into int32 lanes.  Per group of 4 channel pairs the pair-packed weights are
    interleaved (ZIP1/ZIP2 on 16-bit lanes) into 4 K values per channel; each pixel's 8 K
    values are narrowed once (XTN) and indexed by SDOT's lane."""
    name = "dotprod"
    guard = "NN_HAVE_ARM64"
    attr = "NN_DOTPROD "
    runtime = "nn_cpu_has_dotprod()"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        out = _neon_head(self, mk, fname)
        for m in range(mk.mr):
            out.append("    int32x4_t " + ", ".join(f"c{m}_{v}_{h} = vdupq_n_s32(0)" for v in range(mk.nv)
                                                  for h in range(2)) + ";")

        def body(k, rem):
            s = ["{"]
            for v in range(mk.nv):
                s += ["    " + x for x in _weights(mk, v, rem, 4 if rem > 2 else 2)]
                for g, (j0, j1) in enumerate(((0, 1), (2, 3))):
                    if g == 1 and rem <= 2:
                        continue
                    s.append(f"    const int8x16_t l{v}_{g} = vreinterpretq_s8_s16(vzip1q_s16(vreinterpretq_s16_s8(W{v}_{j0}), vreinterpretq_s16_s8(W{v}_{j1})));")
                    s.append(f"    const int8x16_t h{v}_{g} = vreinterpretq_s8_s16(vzip2q_s16(vreinterpretq_s16_s8(W{v}_{j0}), vreinterpretq_s16_s8(W{v}_{j1})));")
            for m in range(mk.mr):
                s += ["    " + x for x in _acts8(mk, m, k, rem)]
                for v in range(mk.nv):
                    for g in range(2 if rem > 2 else 1):
                        s.append(f"    c{m}_{v}_0 = vdotq_lane_s32(c{m}_{v}_0, l{v}_{g}, x{m}, {g});")
                        s.append(f"    c{m}_{v}_1 = vdotq_lane_s32(c{m}_{v}_1, h{v}_{g}, x{m}, {g});")
            s.append(f"    w += {rem * mk.nr * 2};")
            s.append("}")
            return s
        out += _group_loops(mk, body, tapoff)
        stores = []
        for m in range(mk.mr):
            for v in range(mk.nv):
                stores.append(f"vst1q_s32(&c[{m}][{v * 8}], c{m}_{v}_0);")
                stores.append(f"vst1q_s32(&c[{m}][{v * 8 + 4}], c{m}_{v}_1);")
        out += _neon_tail(mk, stores)
        return "\n".join(out) + "\n"

    def macs_per_instruction(self, mk: Micro) -> float:
        macs = mk.mr * mk.nv * 64                     # per group of 8 K values
        insns = mk.nv * 8 + mk.mr * 2 + 4 * mk.mr * mk.nv + 1
        return macs / insns


class I8mm(Isa):
    """Armv8.6 i8mm (Cortex-A78C, X2, Neoverse V1/N2): SMMLA, a 2x8 by 8x2 int8 matrix
    product into a 2x2 int32 tile.  Two pixels' 8 K values form the A operand (XTN, XTN2);
    per group of 4 channel pairs the weights are transposed (ZIP on 16-, then 32-bit
    lanes) into 8 K values per channel, two channels per B operand.  An odd last pixel
    pairs with itself (its duplicate row is discarded)."""
    name = "i8mm"
    guard = "NN_HAVE_ARM64"
    attr = "NN_I8MM "
    runtime = "nn_cpu_has_i8mm()"

    def microkernel(self, mk: Micro, fname: str, tapoff: str) -> str:
        out = _neon_head(self, mk, fname)
        pp = -(-mk.mr // 2)
        for i in range(pp):
            out.append("    int32x4_t " + ", ".join(f"c{i}_{v}_{q} = vdupq_n_s32(0)" for v in range(mk.nv)
                                                  for q in range(4)) + ";")

        def body(k, rem):
            s = ["{"]
            for v in range(mk.nv):
                s += ["    " + x for x in _weights(mk, v, rem)]
                z = "vreinterpretq_s16_s8"
                s.append(f"    const int16x8_t A{v}l = vzip1q_s16({z}(W{v}_0), {z}(W{v}_1)), A{v}h = vzip2q_s16({z}(W{v}_0), {z}(W{v}_1));")
                s.append(f"    const int16x8_t B{v}l = vzip1q_s16({z}(W{v}_2), {z}(W{v}_3)), B{v}h = vzip2q_s16({z}(W{v}_2), {z}(W{v}_3));")
                for q, (fn, half) in enumerate((("vzip1q_s32", "l"), ("vzip2q_s32", "l"), ("vzip1q_s32", "h"), ("vzip2q_s32", "h"))):
                    s.append(f"    const int8x16_t b{v}_{q} = vreinterpretq_s8_s32({fn}(vreinterpretq_s32_s16(A{v}{half}), vreinterpretq_s32_s16(B{v}{half})));")
            for m in range(mk.mr):
                s += ["    " + x for x in _acts8(mk, m, k, rem)]
            for i in range(pp):
                hi = 2 * i + 1 if 2 * i + 1 < mk.mr else 2 * i
                s.append(f"    const int8x16_t x{i}p = vcombine_s8(x{2 * i}, x{hi});")
                for v in range(mk.nv):
                    for q in range(4):
                        s.append(f"    c{i}_{v}_{q} = vmmlaq_s32(c{i}_{v}_{q}, x{i}p, b{v}_{q});")
            s.append(f"    w += {rem * mk.nr * 2};")
            s.append("}")
            return s
        out += _group_loops(mk, body, tapoff)
        stores = []
        for i in range(pp):
            for v in range(mk.nv):
                for q in range(4):
                    stores.append(f"vst1_s32(&c[{2 * i}][{v * 8 + 2 * q}], vget_low_s32(c{i}_{v}_{q}));")
                    if 2 * i + 1 < mk.mr:
                        stores.append(f"vst1_s32(&c[{2 * i + 1}][{v * 8 + 2 * q}], vget_high_s32(c{i}_{v}_{q}));")
        out += _neon_tail(mk, stores)
        return "\n".join(out) + "\n"

    def macs_per_instruction(self, mk: Micro) -> float:
        pp = -(-mk.mr // 2)
        macs = mk.mr * mk.nv * 64                     # per group of 8 K values (useful MACs)
        insns = mk.nv * 12 + mk.mr * 2 + pp + 4 * pp * mk.nv + 1
        return macs / insns


ISAS = {"portable": Portable(), "avx2": Avx2(), "avx2u8": Avx2U8(), "avx512vnni": Avx512Vnni(), "neon": Neon(), "dotprod": Dotprod(), "i8mm": I8mm()}
# Register-file budget of the blocking search: accumulators + weight vectors + 1 broadcast.
REGISTERS = {"portable": 16, "avx2": 16, "avx2u8": 16, "avx512vnni": 32, "neon": 32, "dotprod": 32, "i8mm": 32}
