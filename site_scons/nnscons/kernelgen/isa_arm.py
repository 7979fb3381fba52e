"""The Arm plug-ins (arm64 target): NEON (Armv8.0), dotprod (SDOT) and i8mm (SMMLA)."""
from __future__ import annotations

from .microkernel import Isa, Micro, k_loops


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
        out += k_loops(mk, body, tapoff)
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
