"""Per-layer instruction counts of a cortex-m run under qemu, and MACs per instruction.

qemu models no cycles, and Debian's qemu-system-arm ships no TCG plugins (no libinsn.so).
Instead the firmware runs with `-icount shift=ICOUNT_SHIFT`: QEMU's virtual clock then
advances exactly 2^ICOUNT_SHIFT ns per executed instruction, and SysTick, clocked from it at
the machine's processor clock, counts ticks = insns * 2^ICOUNT_SHIFT * hz / 1e9.  The harness
prints each layer's ticks (`measure <i> ticks=N`); this turns them back into instructions.
Shift 6 gives 1.28 (AN505, 20 MHz), 1.6 (other MPS2, 25 MHz) or 2.048 (AN547, 32 MHz) ticks
per instruction, so a count is exact to one instruction (tests/test_cortex_m_insns.py checks a
loop of known length).

These are instructions, not cycles: a Helium instruction does up to 16 lanes of work, a DSP
SMLAD two MACs, and every instruction counts one whatever its latency, stalls or memory
wait states on a real core.  They compare kernel choices on the same model, not speeds.
"""
from __future__ import annotations

import json

from ...fileio import write_if_changed

ICOUNT_SHIFT = 6
SOURCE = (f"qemu -icount shift={ICOUNT_SHIFT}: instructions executed per layer, read with SysTick; "
          "not cycles (qemu models no timing)")


def instructions(ticks: int, hz: int) -> int:
    return int(round(ticks * 1e9 / (hz * 2 ** ICOUNT_SHIFT)))


def layer_counts(report_layers: list, measured: dict, hz: int) -> dict:
    """{"layers": {name: {"insns", "macs_per_insn"}}, network totals, a summary line}."""
    layers, total, missing = {}, 0, []
    for i, layer in enumerate(report_layers):
        ticks = (measured.get(i) or {}).get("ticks")
        if ticks is None:
            missing.append(layer["name"])
            continue
        n = instructions(ticks, hz)
        total += n
        layers[layer["name"]] = {"insns": n, "macs_per_insn": round(layer["macs"] / n, 3) if n else None}
    macs = sum(layer["macs"] for layer in report_layers)
    doc = {"layers": layers, "insns_source": SOURCE,
           "total_insns": None if missing else total,
           "macs_per_insn": round(macs / total, 3) if total and not missing else None}
    if missing:
        line = f"instructions: {len(missing)} layer(s) not measured ({', '.join(missing[:4])})"
    else:
        line = (f"instructions: {total:,} in total, {macs / total:.3f} MACs/instruction "
                f"[{SOURCE}]" if total else "instructions: none measured")
    doc["summary_lines"] = [line]
    return doc


def write_report(target, source, env):
    from ...builders.reports import report
    from ...builders.run import runlog
    from .cores import core
    session = env["NNS_SESSION"]
    with open(str(source[0]), encoding="utf-8") as f:
        measured = runlog.parse(f.read())["measured"]
    layers = report.plan_summary(session)["layers"]
    doc = layer_counts(layers, measured, core(session.options)["hz"])
    write_if_changed(str(target[0]), json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0
