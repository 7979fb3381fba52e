"""The run step for programs that execute on this machine (host target, emulators)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess

from ..fileio import write_if_changed
from . import runlog
from .. import binfiles


def run_program(cmd, timeout, cwd=None, env=None, show=False):
    """Run a program (firmware, emulator, simulator) on this machine: (exit status, or None
    on timeout, and stdout+stderr as text, what was printed so far on a timeout).  show:
    print the command line first (verbose=1)."""
    if show:
        print(("cd %s && " % cwd if cwd else "") + " ".join(shlex.quote(str(c)) for c in cmd))
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return None, (e.output or b"").decode("utf-8", "replace")
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def run_native(target, source, env, prefix=()):
    """target: [run.log, output.npy]; source[0]: the firmware; bins live in NNS_BIN_DIR.
    prefix: an emulator's command line in front of the program (qemu-aarch64 -cpu X)."""
    session = env["NNS_SESSION"]
    log_path, npy_path = str(target[0]), str(target[1])
    output_bin = binfiles.output_path(os.path.dirname(log_path))
    cmd = list(prefix) + [source[0].abspath, env["NNS_BIN_DIR"], output_bin]
    timeout = session.options["run"]["timeout"]
    status, text = run_program(cmd, timeout, show=env["NNS_VERBOSE"])
    if status is None:
        print(f"RUN FAILED [{session.target_cfg.name}]: no result after {timeout} s "
              f"(targets.{session.target_cfg.name}.run.timeout)")
        return 1
    if status not in (0, 1):
        tail = "\n".join(text.splitlines()[-15:])
        print(f"RUN FAILED [{session.target_cfg.name}]: the program exited with status "
              f"{status}:\n{tail}")
        return 1
    runlog.write_output(session, output_bin, npy_path)
    write_if_changed(log_path, text)
    return 0


def parse_bench(text):
    """(total median ms, [(layer cname, median ms)]) from the firmware's bench lines."""
    layers, total = [], None
    for line in text.splitlines():
        f = line.split()
        if len(f) == 5 and f[:2] == ["bench", "layer"]:
            layers.append((f[3], float(f[4])))
        elif len(f) == 3 and f[:2] == ["bench", "total"]:
            total = float(f[2])
    return total, layers


def run_bench(target, source, env):
    """target: [bench.json]; source[0]: the firmware. N timed inferences after a warm-up."""
    session = env["NNS_SESSION"]
    n = env["NNS_ITERATIONS"]
    out_dir = os.path.dirname(str(target[0]))
    cmd = [source[0].abspath, env["NNS_BIN_DIR"], binfiles.output_path(out_dir, bench=True), str(n)]
    status, text = run_program(cmd, session.options["run"]["timeout"])
    total, layers = parse_bench(text)
    if status != 0 or total is None:
        print(f"BENCH FAILED [{session.target_cfg.name}]: status {status}:\n" + "\n".join(text.splitlines()[-15:]))
        return 1
    names = {lp.cname: lp.layer.name for lp in session.plan.layers}
    macs = {lp.cname: lp.macs for lp in session.plan.layers}
    import tempfile
    from ..targets.host.tune import peak, running_variant
    with tempfile.TemporaryDirectory(prefix="nnscons-peak-") as work:
        pk, pk_isa = peak(session, work, session.options)
    isas = {lp.cname: running_variant(lp.spec.get("gemm", {}).get("variants", []), pk_isa)
            for lp in session.plan.layers}
    threads = max([lp.spec.get("gemm", {}).get("threads", 1) for lp in session.plan.layers] or [1])
    doc = {"model": session.model_cfg.name, "target": session.target_cfg.name, "iterations": n,
           "threads": threads, "median_ms": total,
           "peak_gmac_per_s": round(pk, 2), "peak_isa": pk_isa,
           "layers": [{"name": names.get(c, c), "median_ms": ms,
                       "gmac_per_s": round(macs.get(c, 0) / (ms * 1e6), 3) if ms > 0 else None}
                      for c, ms in layers]}
    for r, (c, _) in zip(doc["layers"], layers):
        # generated layers running the peak's variant: against its peak; others have none here
        r["fraction_of_peak"] = (round(r["gmac_per_s"] / pk, 3)
                                 if isas.get(c) == pk_isa and pk > 0 and r["gmac_per_s"] else None)
    write_if_changed(str(target[0]), json.dumps(doc, indent=1) + "\n")
    width = max([len(r["name"]) for r in doc["layers"]] + [5])
    for r in doc["layers"]:
        print(f"  {r['name']:<{width}}  {r['median_ms']:9.3f} ms" +
              (f"  {r['gmac_per_s']:6.1f} GMAC/s" if r["gmac_per_s"] else "") +
              (f"  {r['fraction_of_peak']:4.0%} of peak" if r["fraction_of_peak"] else ""))
    print(f"BENCH [{session.target_cfg.name}] {session.model_cfg.name}: median {total:.3f} ms over {n} "
          f"iterations ({threads} thread{'s' if threads > 1 else ''}); {pk_isa} peak {pk:.1f} GMAC/s "
          f"(one core) -> {target[0]}")
    return 0
