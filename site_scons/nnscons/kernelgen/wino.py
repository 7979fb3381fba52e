"""Exact integer Winograd F(4,3) for 3x3 / stride 1 / dilation 1 convs (kernelgen.winomath
has the algebra and why it is exact): a layer's C source whose variants (avx512vnni:
vpdpwssd on ymm, avx2: vpmaddwd + vpaddd, portable: uint32 C) all compute the same integers.

Per band of tile rows (4 output rows each), each thread in its own scratch:
- the input transform V = B^T d B of every 6x6 tile (zero-point padded), int16, stored as 36
  matrices [position][tile][channel pair];
- per block of `mr` tiles and panel of 16 output channels, the 36 GEMMs over the input
  channels in int16 pairs into wrapping int32 (mb[position][tile][16]), then per tile the
  output transform AS^T M' AS (wrapping int32), y = (z * 9^-1) >> 6, and the direct kernels'
  epilogue (bias, requantization, clamp, fused residual add) on each row of 4 pixels.
Weights U'' = diag(L / S) GS g GS^T (int16, winomath) are prepacked as [panel][36][ICP/2][16][2] (pack_u)."""
from __future__ import annotations

import numpy as np

from ..cstrings import c_comment
from . import winogemm, winomath
from .isa_x86 import _avx2_epilogue, _vnni_epilogue
from .microkernel import Micro
from .winogemm import _ATTR, NR

# avx512vnni512: the GEMM and the output transform on zmm (16 channels a vector), two panels
# per GEMM block; the input transform is avx512vnni's.  Not among FALLBACK: under isa auto it
# is compiled in only where chosen (host-measured's timing, a tuning file's or the layer's isa)
VARIANTS = ("avx512vnni", "avx512vnni512", "avx2", "portable")
FALLBACK = ("avx512vnni", "avx2", "portable")
CPUID = ("avx512vnni512", "avx2", "portable")
MR = {"avx512vnni": 12, "avx512vnni512": 14, "avx2": 6, "portable": 4}   # tiles per GEMM block
PANELS = {"avx512vnni512": 2}          # 16-channel panels per GEMM block (others: 1)
_GUARD = {"avx512vnni": "NN_HAVE_X86", "avx512vnni512": "NN_HAVE_X86", "avx2": "NN_HAVE_X86", "portable": "1"}
RUNTIME = {"avx512vnni": "nn_cpu_has_avx512vnni()",
           "avx512vnni512": "nn_cpu_has_avx512vnni() && __builtin_cpu_supports(\"avx512bw\")",
           "avx2": "nn_cpu_has_avx2()", "portable": "1"}


def supports(g: dict) -> bool:
    """A conv the transform applies to: 3x3, stride 1, dilation 1 (groups 1: generated)."""
    return (g["kh"], g["kw"], g["sh"], g["sw"], g["dh"], g["dw"]) == (3, 3, 1, 1, 1, 1) and g["oh"] * g["ow"] > 1


def dims(g: dict) -> dict:
    icp = g["ic"] + (g["ic"] & 1)
    return {"icp": icp, "np": -(-g["oc"] // NR), "th": -(-g["oh"] // 4), "tw": -(-g["ow"] // 4)}


def pack_u(wm: np.ndarray, g: dict) -> np.ndarray:
    """(OC, 9, IC) int8 -> U' int16 as [panel][36][ICP/2][16][2] (zero padding)."""
    d = dims(g)
    oc, ic = wm.shape[0], g["ic"]
    w = np.moveaxis(wm.reshape(oc, 3, 3, ic), -1, 1)               # (OC, IC, 3, 3)
    u = winomath.weights(w).reshape(oc, ic, 36)                     # (OC, IC, 36)
    full = np.zeros((d["np"] * NR, d["icp"], 36), np.int64)
    full[:oc, :ic] = u
    out = full.reshape(d["np"], NR, d["icp"] // 2, 2, 36).transpose(0, 4, 2, 1, 3)
    assert np.abs(out).max(initial=0) < 2 ** 15
    return np.ascontiguousarray(out).astype(np.int16).reshape(-1)


def block(isa: str, nt: int) -> int:
    """Tiles per GEMM block for a band of nt tiles: at most MR[isa], the blocks as even as
    can be (14 tiles: 7 + 7, not 12 + 2, whose 4 accumulators leave the units idle)."""
    n = -(-nt // MR[isa])
    return -(-nt // n)


def row_bytes(g: dict) -> int:
    """Bytes of one tile row's V (36 x tiles x ICP int16): the least a band takes."""
    d = dims(g)
    return 36 * d["tw"] * d["icp"] * 2


def u_bytes(g: dict) -> int:
    """Bytes of the transformed weights U (36 x ICP x the padded OC, int16): what each band streams."""
    d = dims(g)
    return 36 * d["icp"] * d["np"] * NR * 2


def band_rows(g: dict, budget: int) -> int:
    """Tile rows per band: the band's V within the layer's l1_budget, at least one row."""
    return max(1, min(dims(g)["th"], budget // row_bytes(g)))


def scratch(spec: dict) -> dict:
    """Per thread: V of a band (36 x band tiles x ICP int16) and the GEMM block's mb."""
    gm = spec["gemm"]
    g, w = gm["geom"], gm["wino"]
    d = dims(g)
    vb = -(-(36 * w["band"] * d["tw"] * d["icp"] * 2) // 64) * 64
    mb = 36 * w["band"] * d["tw"] * NR * 4 * max(PANELS.get(v, 1) for v in w["variants"])
    stride = vb + mb
    return {"buf": 0, "buf_stride": stride, "mb": vb, "bytes": stride * gm["threads"]}


def _bt(d: list, add, sub, shl) -> list:
    """B^T applied to 6 expressions (C), sharing subexpressions; returns (statements, 6 names)."""
    return [sub(d[4], d[2]), shl(sub(d[0], d[2]), 2), sub(d[4], shl(d[2], 2)), sub(d[3], shl(d[1], 2)),
            shl(sub(d[3], d[1]), 1), sub(d[5], d[3]), shl(sub(d[1], d[3]), 2)]


def _ops(isa: str, bits: int, width: int = 256) -> tuple:
    """(add, sub, shift left, type) emitters of a transform: int16 lanes for the input's (int32
    in portable C, shifted by multiplying: a negative value is not left-shifted in C), wrapping
    32-bit ones for the output's (uint32_t in portable C)."""
    if isa == "portable":
        shl = (lambda a, n: f"({a} * {1 << n})") if bits == 16 else (lambda a, n: f"({a} << {n})")
        return (lambda a, b: f"({a} + {b})"), (lambda a, b: f"({a} - {b})"), shl, \
            "int32_t" if bits == 16 else "uint32_t"
    return (lambda a, b: f"_mm{width}_add_epi{bits}({a}, {b})"), (lambda a, b: f"_mm{width}_sub_epi{bits}({a}, {b})"), \
        (lambda a, n: f"_mm{width}_slli_epi{bits}({a}, {n})"), f"__m{width}i"


def _transform_in(ind: str, isa: str, width: int = 256) -> list:
    """Statements computing the 36 V values v_i_j from the 36 loads d_i_j (rows i, columns j)."""
    add, sub, shl, ty = _ops(isa, 16, width)
    out = []

    def bt(src: list, dst: list):
        c, f, a, b, e, h, k = [f"t{n}" for n in range(7)]
        exprs = _bt(src, add, sub, shl)
        out.append(ind + "{ const " + ty + " " + ", ".join(f"{n} = {x}" for n, x in zip([c, f, a, b, e, h, k], exprs)) + ";")
        vals = [add(c, f), add(a, b), sub(a, b), add(c, e), sub(c, e), add(h, k)]
        out.append(ind + "  " + " ".join(f"{dst[i]} = {vals[i]};" for i in range(6)) + " }")
    out.append(ind + ty + " " + ", ".join(f"r{i}_{j}" for i in range(6) for j in range(6)) + ";")
    for j in range(6):          # columns: r[.][j] = B^T d[.][j]
        bt([f"d{i}_{j}" for i in range(6)], [f"r{i}_{j}" for i in range(6)])
    out.append(ind + ty + " " + ", ".join(f"v{i}_{j}" for i in range(6) for j in range(6)) + ";")
    for i in range(6):          # rows: v[i][.] = r[i][.] B
        bt([f"r{i}_{j}" for j in range(6)], [f"v{i}_{j}" for j in range(6)])
    return out


def _tin(isa: str, g: dict, d: dict, vs: int, zp: int) -> list:
    """tin_<isa>(v, x, ty0, nt): the input transform of nt tiles from tile row ty0."""
    ic, icp = g["ic"], d["icp"]
    L = [f"static {_ATTR[isa]}void tin_{isa}(int16_t *v, const int8_t *x, int ty0, int nt)", "{",
         "    for (int t = 0; t < nt; ++t) {",
         f"        const int ty = ty0 + t / {d['tw']}, tx = t % {d['tw']};",
         "        const int8_t *p[36];",
         f"        int16_t *vt = v + (long)t * {icp};",
         "        int c = 0;",
         "        for (int i = 0; i < 6; ++i)",
         "            for (int j = 0; j < 6; ++j) {",
         f"                const int iy = ty * 4 - {g['pt']} + i, ix = tx * 4 - {g['pl']} + j;",
         f"                p[i * 6 + j] = iy >= 0 && iy < {g['ih']} && ix >= 0 && ix < {g['iw']} ? "
         f"x + ((long)iy * {g['iw']} + ix) * {ic} : zrow;",
         "            }"]
    if isa == "avx512vnni512":     # 32 channels a zmm (avx512bw), then avx512vnni's steps
        L.append(f"        for (; c + 32 <= {ic}; c += 32) {{")
        L += [f"            const __m512i d{i}_{j} = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)"
              f"(p[{i * 6 + j}] + c)));" for i in range(6) for j in range(6)]
        L += _transform_in("            ", isa, 512)
        L += [f"            _mm512_storeu_si512((void *)(vt + {(i * 6 + j) * vs} + c), v{i}_{j});"
              for i in range(6) for j in range(6)]
        L.append("        }")
    if isa != "portable":
        L.append(f"        for (; c + 16 <= {ic}; c += 16) {{")
        L += [f"            const __m256i d{i}_{j} = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)"
              f"(p[{i * 6 + j}] + c)));" for i in range(6) for j in range(6)]
        L += _transform_in("            ", isa)
        L += [f"            _mm256_storeu_si256((__m256i *)(void *)(vt + {(i * 6 + j) * vs} + c), v{i}_{j});"
              for i in range(6) for j in range(6)]
        L.append("        }")
    if isa == "avx512vnni512" and ic % 16:    # the last ic % 16 channels under a mask (avx512bw)
        k = f"(__mmask16){hex((1 << ic % 16) - 1)}"
        L.append("        {")
        L += [f"            const __m256i d{i}_{j} = _mm256_cvtepi8_epi16(_mm_maskz_loadu_epi8({k}, p[{i * 6 + j}] + c));"
              for i in range(6) for j in range(6)]
        L += _transform_in("            ", isa)
        L += [f"            _mm256_mask_storeu_epi16(vt + {(i * 6 + j) * vs} + c, {k}, v{i}_{j});"
              for i in range(6) for j in range(6)]
        L += [f"            c = {ic};", "        }"]
    L.append(f"        for (; c < {ic}; ++c) {{")
    L += [f"            const int32_t d{i}_{j} = p[{i * 6 + j}][c];" for i in range(6) for j in range(6)]
    L += _transform_in("            ", "portable")
    L += [f"            vt[{(i * 6 + j) * vs} + c] = (int16_t)v{i}_{j};" for i in range(6) for j in range(6)]
    L.append("        }")
    if icp > ic:
        L.append(f"        for (int q = 0; q < 36; ++q) vt[(long)q * {vs} + {ic}] = 0;")
    L += ["    }", "}", ""]
    return L


def _epi(isa: str, cols: int, nv: int, g: dict, gm: dict) -> list:
    """epi_<isa>_<cols>_<nv>(y, e, out, last, res): one tile row's `cols` pixels x nv vectors
    of 8 channels, the direct kernels' epilogue (y[j * 2 + v]: pixel j, vector v)."""
    mk = Micro(mr=cols, nv=nv, nr=NR, taps=(0,), pairs=1, ku=1, ostride=g["oc"], res=bool(gm.get("residual")),
               epilogue=gm.get("epilogue", "f64c"))
    head = (f"static {_ATTR[isa]}void epi_{isa}_{cols}_{nv}(const "
            f"{'int32_t' if isa == 'portable' else '__m256i'} *y, const nn_epi_t *e, int8_t *out, int last, const int8_t *res)")
    if isa == "portable":
        q = "nn_requantize((int64_t)y[m * 16 + j] + e->bias[j], e->mult[j], e->shift[j], e->zp, e->act_min, e->act_max)"
        if mk.res:
            q = f"nn_res_add({q}, res[m * {g['oc']} + j], e->res)"
        return [head, "{", "    " + ("" if mk.res else "(void)res; "),
                f"    for (int m = 0; m < {cols}; ++m)",
                f"        for (int j = 0; j < {(nv - 1) * 8} + last; ++j)",
                f"            out[m * {g['oc']} + j] = {q};", "}", ""]
    body = (_vnni_epilogue if isa.startswith("avx512") else _avx2_epilogue)(mk, lambda m, v: f"y[{m * 2 + v}]")
    return [head, "{"] + body + ["}", ""]


def _at(m: list, add, sub, shl) -> list:
    """AS^T (columns scaled by [6, 4, 4, 1, 1, 24]) on 6 expressions: 4 results."""
    a1, b1 = shl(add(m[1], m[2]), 2), shl(sub(m[1], m[2]), 2)
    a2, b2 = add(m[3], m[4]), sub(m[3], m[4])
    return [("a1", a1), ("b1", b1), ("a2", a2), ("b2", b2)], [
        add(add(shl(m[0], 2), shl(m[0], 1)), add("a1", "a2")), add("b1", shl("b2", 1)),
        add("a1", shl("a2", 2)), add(add("b1", shl("b2", 3)), add(shl(m[5], 4), shl(m[5], 3)))]


def _a(m: list, add, sub, shl) -> list:
    """A^T (unscaled: winomath folds its row scale into U'') on 6 expressions: 4 results."""
    return [("a1", add(m[1], m[2])), ("b1", sub(m[1], m[2])), ("a2", add(m[3], m[4])), ("b2", sub(m[3], m[4]))], [
        add(m[0], add("a1", "a2")), add("b1", shl("b2", 1)), add("a1", shl("a2", 2)), add(add("b1", shl("b2", 3)), m[5])]


def _transform_out(ind: str, isa: str, width: int = 256) -> list:
    """z_i_j (4x4) from m_i_j (6x6), wrapping 32-bit arithmetic: A^T over i, AS over j."""
    add, sub, shl, ty = _ops(isa, 32, width)
    out = [ind + ty + " " + ", ".join(f"s{i}_{j}" for i in range(4) for j in range(6)) + ";",
           ind + ty + " " + ", ".join(f"z{i}_{j}" for i in range(4) for j in range(4)) + ";"]

    def at(src, dst, f=_at):
        tmp, res = f(src, add, sub, shl)
        out.append(ind + "{ const " + ty + " " + ", ".join(f"{n} = {x}" for n, x in tmp) + ";")
        out.append(ind + "  " + " ".join(f"{dst[i]} = {res[i]};" for i in range(4)) + " }")
    for j in range(6):
        at([f"m{i}_{j}" for i in range(6)], [f"s{i}_{j}" for i in range(4)], _a)
    for i in range(4):
        at([f"s{i}_{j}" for j in range(6)], [f"z{i}_{j}" for j in range(4)])
    return out


def _classes(g: dict) -> list:
    """[(condition on pn, nv, last)] of the 16-channel panels."""
    full, rem = g["oc"] // NR, g["oc"] % NR
    return ([(f"pn < {full}", 2, 8)] if full else []) + \
        ([(f"pn == {full}", -(-rem // 8), rem % 8 or 8)] if rem else [])


def _cols(g: dict) -> list:
    return sorted({4 if g["ow"] >= 4 else g["ow"]} | ({g["ow"] % 4} if g["ow"] % 4 else set()))


def _tout(isa: str, g: dict, qs: int) -> list:
    """tout_<isa>(c, mb, ty0, t0, cnt, pn): per tile the output transform, the recovery of
    y and the epilogue of each of its rows."""
    oc, tw = g["oc"], -(-g["ow"] // 4)
    L = [f"static {_ATTR[isa]}void tout_{isa}(const ctx_t *c, const int32_t *mb, int ty0, int t0, int cnt, int pn)", "{",
         f"    const nn_epi_t *e = &c->epi[pn];",
         "    for (int m = 0; m < cnt; ++m) {",
         f"        const int t = t0 + m, ty = ty0 + t / {tw}, tx = t % {tw};",
         f"        const int rows = {g['oh']} - ty * 4 < 4 ? {g['oh']} - ty * 4 : 4;",
         f"        const int cols = {g['ow']} - tx * 4 < 4 ? {g['ow']} - tx * 4 : 4;"]
    if isa == "portable":
        L += ["        int32_t y[4][64];",
              "        for (int ch = 0; ch < 16; ++ch) {",
              "            const int32_t *s = mb + (long)m * 16 + ch;"]
        L += [f"            const uint32_t m{i}_{j} = (uint32_t)s[{(i * 6 + j) * qs}];" for i in range(6) for j in range(6)]
        L += _transform_out("            ", isa)
        L += [f"            y[{i}][{j} * 16 + ch] = (int32_t)(z{i}_{j} * {winomath.INV9}u) >> 6;"
              for i in range(4) for j in range(4)]
        L.append("        }")
    elif isa == "avx512vnni512":    # 16 channels a vector; the epilogue on its halves
        L += ["        __m256i y[4][8];", f"        const __m512i inv9 = _mm512_set1_epi32({winomath.INV9});"]
        L += [f"        const __m512i m{i}_{j} = _mm512_loadu_si512((const void *)(mb + (long)m * 16 + {(i * 6 + j) * qs}));"
              for i in range(6) for j in range(6)]
        L += _transform_out("        ", isa, 512)
        for i in range(4):
            for j in range(4):
                L += [f"        {{ const __m512i t = _mm512_srai_epi32(_mm512_mullo_epi32(z{i}_{j}, inv9), 6);",
                      f"          y[{i}][{j * 2}] = _mm512_castsi512_si256(t); y[{i}][{j * 2 + 1}] = _mm512_extracti64x4_epi64(t, 1); }}"]
    else:
        L += ["        __m256i y[4][8];",
              f"        const __m256i inv9 = _mm256_set1_epi32({winomath.INV9});",
              "        for (int v = 0; v < 2; ++v) {",
              "            const int32_t *s = mb + (long)m * 16 + v * 8;"]
        L += [f"            const __m256i m{i}_{j} = _mm256_loadu_si256((const __m256i *)(const void *)(s + {(i * 6 + j) * qs}));"
              for i in range(6) for j in range(6)]
        L += _transform_out("            ", isa)
        L += [f"            y[{i}][{j} * 2 + v] = _mm256_srai_epi32(_mm256_mullo_epi32(z{i}_{j}, inv9), 6);"
              for i in range(4) for j in range(4)]
        L.append("        }")
    L += ["        for (int i = 0; i < rows; ++i) {",
          f"            const long at = ((long)(ty * 4 + i) * {g['ow']} + tx * 4) * {oc} + pn * 16;",
          "            int8_t *o = c->out + at;",
          "            const int8_t *r = c->res ? c->res + at : 0;"]
    first = True
    for cols in _cols(g):
        for cond, nv, last in _classes(g):
            L.append(f"            {'if' if first else 'else if'} (cols == {cols} && {cond})")
            L.append(f"                epi_{isa}_{cols}_{nv}(y[i], e, o, {last}, r);")
            first = False
    L += ["        }", "    }", "}", ""]
    return L


def _band(iv: str, d: dict, tiles: int, vs: int, counts: set) -> list:
    """The GEMMs and band_<iv>(c, ty0, nty): the input transform of a band, then per group of
    PANELS panels and position one 2-4 KiB slice of U per panel, in L1 across the band's tile
    blocks (streamed from L2 once per band, not once per block), then the output transforms."""
    mr = block(iv, tiles)
    rs = sorted({mr for n in counts if n >= mr} | {n % mr for n in counts if n % mr})
    pp = PANELS.get(iv, 1)
    groups = ([(f"int pn = 0; pn + {pp} <= {d['np']}; pn += {pp}", pp)] if d["np"] >= pp else []) + \
        ([(f"int pn = {d['np'] - 1}; pn < {d['np']}; ++pn", 1)] if pp > 1 and d["np"] % pp else [])
    L = [ln for p in sorted({p for _, p in groups}) for r in rs for ln in winogemm.gemm(iv, r, d["icp"], p)]
    L += [f"static {_ATTR[iv]}void band_{iv}(const ctx_t *c, int ty0, int nty)", "{",
          f"    const int nt = nty * {d['tw']};", f"    tin_{iv}(c->v, c->x, ty0, nt);"]
    for loop, p in groups:
        second = f"u + {36 * d['icp'] * NR}, mq + {36 * tiles * NR} + t0 * 16" if p == 2 else "0, 0"
        L += [f"    for ({loop}) {{", "        for (int q = 0; q < 36; ++q) {",
              f"            const int16_t *u = c->u + ((long)pn * 36 + q) * {d['icp'] * NR};",
              f"            const int16_t *vq = c->v + (long)q * {vs};",
              f"            int32_t *mq = c->mb + (long)q * {tiles * NR};",
              f"            for (int t0 = 0; t0 < nt; t0 += {mr}) {{",
              f"                const int cnt = nt - t0 < {mr} ? nt - t0 : {mr};"]
        L += [f"                {'if' if k == 0 else 'else if'} (cnt == {r}) {winogemm.name(iv, r, p)}"
              f"(vq + (long)t0 * {d['icp']}, u, mq + t0 * 16, {second});" for k, r in enumerate(rs)]
        L += ["            }", "        }"]
        L += [f"        tout_{iv}(c, c->mb + {k * 36 * tiles * NR}, ty0, 0, nt, pn + {k});" for k in range(p)] \
            if p > 1 else [f"        tout_{iv}(c, c->mb, ty0, 0, nt, pn);"]
        L.append("    }")
    return L + ["}"]


def _bands(g: dict, band: int, threads: int) -> list:
    """[[(ty0, nty), ...] per thread]: the tile rows in `threads` even groups, each in bands
    of at most `band` tile rows."""
    th = -(-g["oh"] // 4)
    out = []
    for i in range(threads):
        r0, r1 = th * i // threads, th * (i + 1) // threads
        n = -(-(r1 - r0) // band) if r1 > r0 else 0
        out.append([(r0 + (r1 - r0) * k // n, (r1 - r0) * (k + 1) // n - (r1 - r0) * k // n) for k in range(n)])
    return out


def layer_source(spec: dict) -> str:
    """The C source of one Winograd conv layer from its host spec (spec['gemm'] with 'wino')."""
    gm = spec["gemm"]
    g, w = gm["geom"], gm["wino"]
    d = dims(g)
    variants = w["variants"]
    cn = spec["cname"]
    symbol = spec.get("symbol", f"layer_{cn}")
    res = gm.get("residual")
    threads = gm["threads"]
    sc = scratch(spec)
    vs = w["band"] * d["tw"] * d["icp"]          # V's position stride (elements)
    bands = _bands(g, w["band"], threads)
    zp_in = spec["inputs"][0]["zp"]
    par = spec["params"]
    L = [f"/* Generated by nnscons kernelgen for target kind 'host'. Do not edit.\n"
         f" * layer: {c_comment(spec['name'])} ({spec['op']}), Winograd F(4,3): {d['th']}x{d['tw']} tiles, "
         f"IC {g['ic']}, OC {g['oc']} ({d['np']} panels of {NR}), band {w['band']} tile rows, threads {threads}\n"
         + (f" * fused residual add: {c_comment(res['name'])} (the other operand is in[1])\n" if res else "")
         + " */",
         "#include <stdint.h>", "#include <string.h>", '#include "nn_exec.h"', '#include "nn_gemm.h"',
         '#include "nn_threads.h"', "",
         f"void {symbol}(const int8_t *const *in, int8_t *out, const uint8_t *params, nn_exec_t *x);",
         "#ifdef NN_MEASURE_VARIANT", "extern int nn_measure_variant;", "#endif", ""]
    if gm["isa"] != "auto" and _GUARD[variants[0]] != "1":
        L += [f"#if !({_GUARD[variants[0]]})",
              f'#error "isa {gm["isa"]} is forced for this layer but this compiler cannot build it"', "#endif", ""]
    L.append(f"static const int8_t zrow[{g['ic']}] = {{ {', '.join([str(zp_in)] * g['ic'])} }};   /* the padding */")
    L += ["", "typedef struct {", "    const int16_t *u;", "    const int8_t *x, *res;", "    int8_t *out;",
          "    int16_t *v;", "    int32_t *mb;", "    const nn_epi_t *epi;", "    int var;", "} ctx_t;", ""]
    counts = set()
    for cell in bands:
        for _, nty in cell:
            counts.add(nty * d["tw"])
    for iv in variants:
        if _GUARD[iv] != "1":
            L.append(f"#if {_GUARD[iv]}")
        L += _tin(iv, g, d, vs, zp_in)
        for cols in _cols(g):
            for nv in sorted({nv for _, nv, _ in _classes(g)}):
                L += _epi(iv, cols, nv, g, gm)
        L += _tout(iv, g, w["band"] * d["tw"] * NR)
        L += _band(iv, d, w["band"] * d["tw"], vs, counts)
        if _GUARD[iv] != "1":
            L.append("#endif")
        L.append("")
    flat = [b for cell in bands for b in cell]
    at = [0]
    for cell in bands:
        at.append(at[-1] + len(cell))
    L += [f"static const int band_ty0[{len(flat) or 1}] = {{ {', '.join(str(b[0]) for b in flat) or '0'} }};",
          f"static const int band_nty[{len(flat) or 1}] = {{ {', '.join(str(b[1]) for b in flat) or '0'} }};",
          f"static const int cell_at[{len(at)}] = {{ {', '.join(map(str, at))} }};", "",
          "/* thread i of n: its tile rows, band by band, in its own scratch */",
          "static void part(void *arg, int i, int n)", "{",
          "    ctx_t t = *(const ctx_t *)arg;",
          f"    t.v = (int16_t *)(void *)((uint8_t *)(void *)t.v + (long)i * {sc['buf_stride']});",
          f"    t.mb = (int32_t *)(void *)((uint8_t *)(void *)t.mb + (long)i * {sc['buf_stride']});",
          f"    for (int cell = i; cell < {threads}; cell += n)",
          "        for (int k = cell_at[cell]; k < cell_at[cell + 1]; ++k) {"]
    for idx, iv in enumerate(variants):
        if _GUARD[iv] != "1":
            L.append(f"#if {_GUARD[iv]}")
        L.append(f"            if (t.var == {idx}) band_{iv}(&t, band_ty0[k], band_nty[k]);")
        if _GUARD[iv] != "1":
            L.append("#endif")
    L += ["        }", "}", ""]
    conv_zp = res["conv_zp"] if res else spec["out"]["zp"]
    off = {k: par[k]["offset"] for k in ("wino_u", "wino_bias", "wino_mult", "wino_shift")}
    L += [f"void {symbol}(const int8_t *const *in, int8_t *out, const uint8_t *params, nn_exec_t *x)", "{",
          f"    nn_epi_t epi[{d['np']}];"]
    if res:
        L.append(f"    nn_res_t res;   /* the fused add: {c_comment(res['name'])} */")
    L += [f"    ctx_t c = {{ (const int16_t *)(const void *)(params + {off['wino_u']}), in[0], {'in[1]' if res else '0'}, out,",
          f"                 (int16_t *)(void *)(x->scratch + {sc['buf']}), (int32_t *)(void *)(x->scratch + {sc['mb']}), epi, -1 }};"]
    for idx, iv in enumerate(variants):
        cond = RUNTIME[iv] if gm["isa"] == "auto" else "1"
        L += [f"    if (c.var < 0 && {cond})", f"        c.var = {idx};"]
    L += ["#ifdef NN_MEASURE_VARIANT   /* the host's variant measurement forces one (targets/host/measure.py) */",
          "    if (nn_measure_variant >= 0)", "        c.var = nn_measure_variant;", "#endif",
          "    {   /* which variant runs: the layer report's */",
          f"        static const char *const names[] = {{ {', '.join(f'{chr(34)}wino-{v}{chr(34)}' for v in variants)} }};",
          "        x->variant = c.var >= 0 ? names[c.var] : 0;", "    }"]
    L += _res_init(res, conv_zp)
    L += [f"    for (int pn = 0; pn < {d['np']}; ++pn) {{",
          f"        nn_epi_init(&epi[pn], (const int32_t *)(const void *)(params + {off['wino_bias']}) + pn * 16, "
          f"(const int32_t *)(const void *)(params + {off['wino_mult']}) + pn * 16, "
          f"(const int32_t *)(const void *)(params + {off['wino_shift']}) + pn * 16, 16, "
          f"{conv_zp}, {spec['act'][0]}, {spec['act'][1]});"]
    if res:
        L.append("        epi[pn].res = &res;")
    L.append("    }")
    L.append(f"    nn_parallel_for(x->pool, {threads}, part, &c);" if threads > 1 else "    part(&c, 0, 1);")
    L.append("}")
    return "\n".join(L) + "\n"


def _res_init(res, conv_zp) -> list:
    """The fused add's constants (as kernelgen.emit's direct layers set them)."""
    if not res:
        return []
    if res.get("tflite"):
        t = res["tflite"]
        return [f"    nn_res_init_tfl(&res, {conv_zp}, {res['mult_conv']}, {t['e_conv']}, {res['zp_other']}, "
                f"{res['mult_other']}, {t['e_other']}, {t['mult_out']}, {t['e_out']}, {res['zp']}, "
                f"{res['act'][0]}, {res['act'][1]});"]
    return [f"    nn_res_init(&res, {conv_zp}, {res['mult_conv']}, {res['zp_other']}, {res['mult_other']}, "
            f"{res['shift']}, {res['zp']}, {res['act'][0]}, {res['act'][1]});"]
