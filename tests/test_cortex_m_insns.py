"""The cortex-m target's instruction counter (targets/cortex_m/insns.py): SysTick under
qemu -icount, turned into instructions, checked against loops of known length on an MPS2
machine (25 MHz), the MPS2 AN505 (20 MHz, TrustZone) and the MPS3 AN547 (32 MHz), with the project's own start-up, counter,
linker script and qemu command line."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "site_scons"))
from nnscons.targets.cortex_m import CPUS, STACK  # noqa: E402
from nnscons.targets.cortex_m.insns import instructions, layer_counts  # noqa: E402
from nnscons.targets.cortex_m.nodes import linker_script  # noqa: E402
from nnscons.targets.cortex_m.tool import SECTIONS, qemu_command  # noqa: E402

CC, QEMU = "arm-none-eabi-gcc", "qemu-system-arm"
KERNELS = os.path.join(ROOT, "kernels", "cortex_m")

# loop(n) is n iterations of exactly two instructions (subs, bne)
PROGRAM = r"""
#include <stdint.h>
#include "nn_cm_counter.h"
#include "nn_cm_semihost.h"
static void __attribute__((noinline)) loop(uint32_t n)
{
    __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) :: "cc");
}
int main(void)
{
    static const uint32_t ns[] = { 1000, 2000, 1000000, 2000000, 20000000 };
    nn_cm_counter_start();
    for (int i = 0; i < 5; ++i) {
        uint64_t a = nn_cm_counter_now();
        loop(ns[i]);
        uint64_t b = nn_cm_counter_now();
        sh_printf("loop %lu ticks=%llu\n", (unsigned long)ns[i], (unsigned long long)(b - a));
    }
    return 0;
}
"""


@pytest.mark.skipif(not (shutil.which(CC) and shutil.which(QEMU)),
                    reason="needs arm-none-eabi-gcc and qemu-system-arm (Debian: apt-get install "
                           "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)")
@pytest.mark.parametrize("cpu", ["cortex-m3", "cortex-m33", "cortex-m55"])
def test_a_loop_of_known_length_counts_exactly(tmp_path, cpu):
    core = CPUS[cpu]
    (tmp_path / "prog.c").write_text(PROGRAM)
    (tmp_path / "link.ld").write_text(linker_script(core, STACK))
    sources = [str(tmp_path / "prog.c")] + [os.path.join(KERNELS, f) for f in
                                            ("nn_cm_start.c", "nn_cm_semihost.c", "nn_cm_counter.c")]
    elf = str(tmp_path / "prog.elf")
    subprocess.run([CC, *core["flags"], *SECTIONS, "-O2", "-I", KERNELS, *sources, "-nostartfiles",
                    "-T", str(tmp_path / "link.ld"), "-Wl,--gc-sections", "-Wl,--no-warn-execstack",
                    "--specs=nano.specs", "-o", elf], check=True)
    cmd = qemu_command({"run": {"qemu": QEMU}}, core["machine"], elf, ".", "out.bin")
    out = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=300).stdout
    counts = {}
    for line in out.splitlines():
        if line.startswith("loop "):
            n, ticks = line.split()[1], line.split()[2]
            counts[int(n)] = instructions(int(ticks.split("=")[1]), core["hz"])
    assert len(counts) == 5, out
    # the same call and counter reads around each loop: the difference is the loop's own 2n
    # instructions, to one instruction (SysTick ticks 1.28, 1.6 or 2.048 times per instruction)
    for n in (1000, 1000000):
        assert abs((counts[2 * n] - counts[n]) - 2 * n) <= 1, counts
    overhead = counts[1000] - 2000
    assert 0 <= overhead < 40, counts
    # 40 M instructions: SysTick's 24 bits wrap a few times on the way, its exception counts them
    assert abs(counts[20000000] - 40000000 - overhead) <= 1 + 40 * 5, counts


def test_layer_counts_and_a_layer_not_measured():
    layers = [{"name": "a", "macs": 1000}, {"name": "b", "macs": 10}]
    hz = CPUS["cortex-m4"]["hz"]
    doc = layer_counts(layers, {0: {"ticks": 1600}, 1: {"ticks": 16}}, hz)
    assert doc["layers"] == {"a": {"insns": 1000, "macs_per_insn": 1.0}, "b": {"insns": 10, "macs_per_insn": 1.0}}
    assert doc["total_insns"] == 1010 and "not cycles" in doc["insns_source"]
    doc = layer_counts(layers, {0: {"ticks": 1600}}, hz)
    assert doc["total_insns"] is None and "1 layer(s) not measured (b)" in doc["summary_lines"][0]
