"""report.json's extra fields for arm64: the variant each generated layer ran (from run.log)
and a Cortex-A76 latency estimate from the generator's static MACs/instruction."""
from __future__ import annotations

# Cortex-A76 (2.4 GHz), sustained NEON integer issue assumed for the latency estimate:
# 2 vector pipes; the static instruction count of the inner loop is the bottleneck
A76_GHZ, A76_VECTOR_IPC = 2.4, 2.0


def variant_report(session, log_text: str) -> dict:
    """report.json's extra fields from run.log: per generated layer the variant it ran and
    its MACs/instruction, and the Cortex-A76 @ 2.4 GHz latency estimate for that variant."""
    ran = {}
    for line in log_text.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "variant":
            ran[f[1]] = f[2]
    layers, cycles, isas = {}, 0.0, set()
    for lp in session.plan.layers:
        v = ran.get(lp.cname)
        if v is None:
            continue
        figs = lp.report.get("macs_per_insn", {})
        layers[lp.layer.name] = {"variant": v, "variant_macs_per_insn": figs.get(v)}
        isas.add(v)
        if figs.get(v):
            cycles += lp.macs / figs[v] / A76_VECTOR_IPC
    out = {"layers": layers}
    if layers:
        ms = cycles / (A76_GHZ * 1e6)
        out["a76_estimate_ms"] = round(ms, 3)
        out["summary_lines"] = [f"estimate (not measured): generated conv/linear layers ~{ms:.2f} ms on a "
                                f"Cortex-A76 @ {A76_GHZ} GHz with the {'/'.join(sorted(isas))} variant(s), "
                                f"from the static MACs/instruction at {A76_VECTOR_IPC:g} vector instructions "
                                f"per cycle"]
    return out
