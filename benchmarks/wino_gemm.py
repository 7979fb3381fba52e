"""The Winograd GEMM's register blockings alone, V and U resident in L1 (one core):

    .venv/bin/python benchmarks/wino_gemm.py [icp]

Compiles kernelgen.winogemm's own generated GEMMs (one position: r tiles x 16 channels of
one or two panels over K = icp/2 int16 pairs, default icp 64: ResNet-18's layer1) for each
x86 variant and blocking this CPU runs, checks each against the portable one, and prints
their int16 GMAC/s (the best of 5 timings of 200,000 calls).  Against a layer's time this
tells what the GEMM could do and how much the layer loses around it (transforms, memory).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))
from nnscons.cpuinfo import cpu_info  # noqa: E402
from nnscons.kernelgen import winogemm  # noqa: E402
from nnscons.targets.host import measure  # noqa: E402

# (variant, tiles, panels): the blockings the variants use (band of 14 / 7 tiles) and wider
CASES = [("avx512vnni", 7, 1), ("avx512vnni", 12, 1), ("avx512vnni", 14, 1),
         ("avx512vnni512", 7, 1), ("avx512vnni512", 14, 1), ("avx512vnni512", 7, 2), ("avx512vnni512", 14, 2),
         ("avx2", 6, 1)]
CALLS = 200_000


def program(cases, icp: int) -> str:
    out = ["#define _POSIX_C_SOURCE 200809L", "#include <stdint.h>", "#include <stdio.h>", "#include <string.h>",
           "#include <time.h>", '#include "nn_gemm.h"']
    done = set()
    for isa, r, p in cases + [("portable", r, 1) for _, r, _ in cases]:
        if (isa, r, p) not in done:
            done.add((isa, r, p))
            out += winogemm.gemm(isa, r, icp, p)
    out += ["static int16_t V[16 * 64 * 1024 / 16], U[2 * 36 * 1024 * 16];",
            "static int32_t M[2][16 * 16], R[2][16 * 16];",
            "static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }",
            "int main(void)", "{",
            "    for (int i = 0; i < (int)(sizeof V / 2); ++i) V[i] = (int16_t)(i * 7 % 2001 - 1000);",
            "    for (int i = 0; i < (int)(sizeof U / 2); ++i) U[i] = (int16_t)(i * 13 % 3001 - 1500);"]
    for isa, r, p in cases:
        f, ref = winogemm.name(isa, r, p), winogemm.name("portable", r, 1)
        w1 = f"U + {icp * 16}"
        out += ["    {", f"        {f}(V, U, M[0], {w1}, M[1]);", f"        {ref}(V, U, R[0], 0, 0);",
                f"        {ref}(V, {w1}, R[1], 0, 0);",
                f"        if (memcmp(M[0], R[0], {r * 64}) || ({p} == 2 && memcmp(M[1], R[1], {r * 64}))) "
                f"{{ printf(\"{f} differs from the portable GEMM\\n\"); return 1; }}",
                "        double best = 1e9;",
                "        for (int rep = 0; rep < 5; ++rep) {",
                "            double t0 = now();",
                f"            for (int i = 0; i < {CALLS}; ++i) {f}(V + (i & 7) * {icp}, U, M[0], {w1}, M[1]);",
                "            if (now() - t0 < best) best = now() - t0;", "        }",
                f"        printf(\"{isa:<14} {r:2d} tiles x {16 * p:2d} channels: %6.1f int16 GMAC/s\\n\", "
                f"{CALLS}.0 * {r * 16 * p * icp} / best / 1e9);", "    }"]
    return "\n".join(out + ["    return 0;", "}"]) + "\n"


def main():
    icp = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    if icp % 2 or not 2 <= icp <= 1024:
        sys.exit("icp: an even channel count, 2..1024")
    info = cpu_info()
    cases = [c for c in CASES if measure.cannot_run(c[0], info) is None]
    print(f"{info['model_name']} (family {info['family']} model {info['model']}), icp {icp}, one core")
    with tempfile.TemporaryDirectory(prefix="nnscons-wino-gemm-") as work:
        src, exe = os.path.join(work, "g.c"), os.path.join(work, "g")
        with open(src, "w", encoding="utf-8") as f:
            f.write(program(cases, icp))
        subprocess.run(["cc", "-std=c99", "-O2", "-I", os.path.join(ROOT, "kernels", "common"), src, "-o", exe], check=True)
        proc = subprocess.run([exe], stdout=subprocess.PIPE, text=True)
        print(proc.stdout, end="")
        sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
