"""Register blockings (mr pixels x nr channels) and the cost models that choose them: the
int16 variants' candidates within the register file, avx2u8's fixed blocking, avx512vnni's
own search.
"""
from __future__ import annotations

from ..cpuinfo import cpu_info
from .isa import REGISTERS


DEFAULT_NR_CHOICES = (8, 16, 24, 32)

# At most this many accumulators, with one register spare, on AMD Zen 1 (one vector
# multiply pipe, each 256-bit op two 128-bit halves): there the 4x16 microkernel ran at
# 18.2 GMAC/s in L1 against 17.5 for 5x16, 17.1 for 3x16, 17.2 for 6x8, 16.5-17.3 for
# 2x32, 4x24, 3x24 (K = 576, paired runs), and a ResNet-18 inference took 2.6% longer with
# 5x16 than with 4x16 (gcc spilled 6x16 there).
MAX_ACCUMULATORS = 8
# Elsewhere (two vector multiply pipes: Zen 2 and later, Intel since Haswell) up to 12,
# and all 16 registers: on an AMD Zen 3 (EPYC, family 25 model 1) ResNet-18's 3x3 convs
# ran 2-10% faster at 6x16 than at 4x16 (per-layer minima of alternating runs), 5x16 in
# between, 4x24 (16 registers, nr 24) 30-40% slower.
WIDE_ACCUMULATORS = 12


def core_limits(cpuinfo: str | None = None) -> tuple:
    """(accumulators, spare registers) of the blocking search for the CPU described by
    /proc/cpuinfo's text (default: this machine's; the host target builds for the
    machine it runs on): AMD family 23 (0x17) models below 0x30 (Zen 1, Zen+) keep
    MAX_ACCUMULATORS and a spare register; any other CPU, or none readable, gets
    WIDE_ACCUMULATORS and no spare."""
    fields = cpu_info(cpuinfo)
    try:
        zen1 = (fields["vendor"] == "AuthenticAMD" and int(fields["family"]) == 23
                and int(fields["model"]) < 0x30)
    except ValueError:
        zen1 = False
    return (MAX_ACCUMULATORS, 1) if zen1 else (WIDE_ACCUMULATORS, 0)


def candidates(isa: str = "avx2", limits: tuple = (MAX_ACCUMULATORS, 1)):
    """(mr, nr) pairs whose accumulators, weight vectors, one broadcast and one product
    temporary fit the register file less `limits[1]` spare registers, with at most
    `limits[0]` accumulators (core_limits: measured per core)."""
    regs = REGISTERS[isa]
    accs, spare = limits
    out = []
    for nr in DEFAULT_NR_CHOICES:
        nv = nr // 8
        for mr in range(1, 15):
            if mr * nv + nv + 2 <= regs - spare and mr * nv <= accs:
                out.append((mr, nr))
    return out


def cost(m: int, n: int, k2: int, mr: int, nr: int) -> float:
    """Cycles, roughly: per K pair the padded multiply-adds at 2 per cycle, all vector ops
    (multiply-add + add per accumulator, a widening per weight vector, counted twice: a
    lane-crossing 256-bit op, two on Zen 1, a broadcast per pixel) on 4 pipes, or the
    loads (nv weight vectors + mr broadcasts, 2 per cycle), whichever dominates; plus a
    per-call epilogue and call overhead."""
    nv = nr // 8
    calls = -(-m // mr) * -(-n // nr)
    per_pair = max(mr * nv / 2.0, (2 * mr * nv + 2 * nv + mr) / 4.0, (mr + nv) / 2.0)
    return calls * (k2 * per_pair + 12 * mr * nv + 20)


def default_blocking(m: int, n: int, k2: int, limits: tuple = (MAX_ACCUMULATORS, 1)) -> dict:
    """The cheapest candidate within `limits` (core_limits); loop order: pixel blocks outer ("block", a block's
    activations stay in L1 across the channel panels) when all the int8 weights fit in
    128 KiB, else panels outer ("panel", each weight panel streamed once per band)."""
    best = min(candidates(limits=limits), key=lambda c: (cost(m, n, k2, *c), -c[0] * c[1], c))
    weights = k2 * 2 * -(-n // best[1]) * best[1]
    return {"mr": best[0], "nr": best[1], "k_unroll": 2,
            "order": "block" if weights <= 128 * 1024 else "panel"}


# ---- the exact vpmaddubsw variant (isa avx2u8) and avx512vnni -------------------------

# Its own register blocking: 8-channel panels (a correction quad costs a panel's whole
# quad again: wider panels have more of them, 20-58% at 16 channels in ResNet-18 against
# 11-34% at 8), mr pixels: mr accumulators, a weight vector, a broadcast, the product and
# the ones of its widening within the 16 registers.
U8_BLOCKING = {"mr": 10, "nr": 8, "k_unroll": 2}

# avx512vnni's blockings (mr pixels x nr channels): nr/8 weight vectors, a broadcast and
# at most 20 accumulators within its 32 registers.  On a Zen 4 (ResNet-18, one blocking for
# every layer, bench medians of 40): 5x32 9.94 ms, 4x32 9.97, 3x32 10.12, 8x16 10.26,
# 6x16 10.39, 6x32 (24 accumulators) 10.38, 4x24 10.48, 2x32 17.2.
VNNI_NR = (8, 16, 24, 32)
VNNI_MAX_ACCUMULATORS = 20
VNNI_LATENCY = 5          # cycles before an accumulator's next vpdpbusd can issue


# the 512-bit variant (avx512vnni512): zmm accumulators of 16 channels, the same budget of
# 20 accumulators in 32 registers (mr x nr/16 + nr/16 weight vectors + a broadcast)
VNNI512_NR = (16, 32, 48, 64)
# AVX-VNNI (avxvnni): ymm, 16 registers: at most 12 accumulators, nv weights and a broadcast
AVXVNNI_MAX_ACCUMULATORS = 12
# per vnni variant: (panel widths, channels per vector, accumulators, registers)
VNNI_SEARCH = {"avx512vnni": (VNNI_NR, 8, VNNI_MAX_ACCUMULATORS, 32),
               "avx512vnni512": (VNNI512_NR, 16, VNNI_MAX_ACCUMULATORS, 32),
               "avxvnni": (VNNI_NR, 8, AVXVNNI_MAX_ACCUMULATORS, 16)}


def vnni_candidates(isa: str = "avx512vnni") -> list:
    """(mr, nr) pairs of a vnni variant within its registers (VNNI_SEARCH)."""
    nrs, lanes, max_acc, regs = VNNI_SEARCH[isa]
    return [(mr, nr) for nr in nrs for mr in range(1, 13)
            if mr * (nr // lanes) <= max_acc and mr * (nr // lanes) + nr // lanes + 2 <= regs]


def vnni_blocking(m: int, n: int, q: int, order: str, isa: str = "avx512vnni") -> dict:
    """The cheapest blocking of a vnni variant (avx512vnni, avx512vnni512, avxvnni) for an
    M x N GEMM of q quads per output, by a rough cycle count per quad: the vector ops (a
    vpdpbusd per accumulator and a broadcast per pixel, two per cycle), the loads (nv
    weight vectors + mr broadcasts, two per cycle) or the accumulators' latency, whichever
    is largest, over the padded M x N calls, plus a per-call epilogue."""
    lanes = VNNI_SEARCH[isa][1]
    best = None
    for mr, nr in vnni_candidates(isa):
        nv = nr // lanes
        calls = -(-m // mr) * -(-n // nr)
        c = calls * (q * max((mr * nv + mr) / 2.0, (mr + nv) / 2.0, VNNI_LATENCY) + 12 * mr * nr // 8 + 20)
        key = (c, -mr * nr, mr, nr)
        if best is None or key < best[0]:
            best = (key, mr, nr)
    return {"mr": best[1], "nr": best[2], "k_unroll": 2, "order": order}
