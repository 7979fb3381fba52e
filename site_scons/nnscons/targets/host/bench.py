"""The host's `bench` alias: time N inferences of the firmware on this machine and write
bench.json (per layer median, GMAC/s and the fraction of this core's peak)."""
from __future__ import annotations

import json
import os
import tempfile

from ... import binfiles
from ...builders.run.hostrun import run_program
from ...fileio import write_if_changed
from . import measure
from .tune import peaks


def parse_bench(text):
    """(total median ms, [(layer cname, median ms)], {layer cname: the kernel variant it ran})
    from the firmware's bench lines."""
    layers, total, ran = [], None, {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 5 and f[:2] == ["bench", "layer"]:
            layers.append((f[3], float(f[4])))
        elif len(f) == 5 and f[:2] == ["bench", "variant"]:
            ran[f[3]] = f[4]
        elif len(f) == 3 and f[:2] == ["bench", "total"]:
            total = float(f[2])
    return total, layers, ran


def run_bench(target, source, env):
    """target: [bench.json]; source[0]: the firmware. N timed inferences after a warm-up."""
    session = env["NNS_SESSION"]
    n = env["NNS_ITERATIONS"]
    out_dir = os.path.dirname(str(target[0]))
    cmd = [source[0].abspath, env["NNS_BIN_DIR"], binfiles.output_path(out_dir, bench=True), str(n)]
    status, text = run_program(cmd, session.options["run"]["timeout"])
    total, layers, reported = parse_bench(text)
    if status != 0 or total is None:
        print(f"BENCH FAILED [{session.target_cfg.name}]: status {status}:\n" + "\n".join(text.splitlines()[-15:]))
        return 1
    names = {lp.cname: lp.layer.name for lp in session.plan.layers}
    macs = {lp.cname: lp.macs for lp in session.plan.layers}
    with tempfile.TemporaryDirectory(prefix="nnscons-peak-") as work:
        pks = peaks(session, work, session.options)
    pk_isa = next(iter(pks))
    pk = pks[pk_isa]
    # the variant each generated layer's run-time dispatch ran: as the firmware says (a
    # firmware built before it said so: the first of its order this CPU runs)
    info = measure.cpu_info()
    ran = {lp.cname: reported.get(lp.cname, "").removeprefix("wino-") or measure.running(lp.spec["gemm"]["variants"], info)
           for lp in session.plan.layers if "gemm" in lp.spec}
    wino = {lp.cname for lp in session.plan.layers if lp.spec.get("gemm", {}).get("wino")}
    # the depthwise kernels' (nn_dw_vnni.c runs zmm: 16 (pixel, channel) lanes)
    dw = {lp.cname: reported.get(lp.cname) or measure.running(lp.report["depthwise"]["variants"], info)
          for lp in session.plan.layers if "depthwise" in lp.report}
    threads = max([lp.spec.get("gemm", {}).get("threads", 1) for lp in session.plan.layers] or [1])
    doc = {"model": session.model_cfg.name, "target": session.target_cfg.name, "iterations": n,
           "threads": threads, "median_ms": total,
           "cpu": {k: info[k] for k in ("vendor", "family", "model", "model_name")},
           "peak_gmac_per_s": round(pk, 2), "peak_isa": pk_isa,
           "peaks_gmac_per_s": {v: round(x, 2) for v, x in pks.items()},
           "layers": [{"name": names.get(c, c), "median_ms": ms,
                       "gmac_per_s": round(macs.get(c, 0) / (ms * 1e6), 3) if ms > 0 else None}
                      for c, ms in layers]}
    for r, (c, _) in zip(doc["layers"], layers):
        v = ran.get(c)
        if v:   # a generated layer: the variant it ran, its vector width, against that variant's peak
            r["variant"] = v
            r["vector_bits"] = measure.WIDTH.get(v, 0)
            if c in wino:   # Winograd F(4,3) (kernelgen.wino): its GMAC/s and fraction count the
                r["variant"] = "wino-" + v      # direct conv's MACs, so the fraction may pass 1
                r["algorithm"] = "winograd F(4,3)"
        elif dw.get(c):
            r["variant"] = dw[c]
            r["vector_bits"] = {"avx512vnni": 512, "avx2": 256}.get(dw[c], 0)
        r["fraction_of_peak"] = (round(r["gmac_per_s"] / pks[v], 3)
                                 if v in pks and pks[v] > 0 and r["gmac_per_s"] else None)
    write_if_changed(str(target[0]), json.dumps(doc, indent=1) + "\n")
    width = max([len(r["name"]) for r in doc["layers"]] + [5])
    for r in doc["layers"]:
        print(f"  {r['name']:<{width}}  {r['median_ms']:9.3f} ms" +
              (f"  {r['gmac_per_s']:6.1f} GMAC/s" if r["gmac_per_s"] else "") +
              (f"  {r['fraction_of_peak']:4.0%} of {v} peak" + (" (winograd, direct MACs)" if r.get("algorithm") else "")
               if (v := r.get("variant", "").removeprefix("wino-")) and r["fraction_of_peak"] else
               f"  ({r['variant']})" if r.get("variant") else ""))
    print(f"BENCH [{session.target_cfg.name}] {session.model_cfg.name}: median {total:.3f} ms over {n} "
          f"iterations ({threads} thread{'s' if threads > 1 else ''}); peaks (one core) "
          + ", ".join(f"{v} {x:.1f}" for v, x in pks.items()) + f" GMAC/s -> {target[0]}")
    return 0
