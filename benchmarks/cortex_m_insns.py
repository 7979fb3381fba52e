"""Per-layer and whole-network MACs per instruction of the cortex-m target on one model for
Cortex-M55 (CMSIS-NN's Helium/MVE path), M7, M4 and M33 (DSP extension) and M3 (scalar C), side
by side, and the Helium/scalar ratio on the conv layers (the goal: at least 4x).

Builds and runs the model for each core's target in the work tree's build/ (as `./nnscons`
would; nothing outside build/ is written), then prints the reports' instruction counts:

    .venv/bin/python benchmarks/cortex_m_insns.py [--targets cortex-m55,cortex-m7,cortex-m4,cortex-m33,cortex-m3] [model ...]

The counts are instructions executed under qemu -icount (targets/cortex_m/insns.py), NOT
cycles: a Helium instruction does up to 16 lanes of work, a DSP SMLAD 2 MACs, and a real
core's latencies, dual issue and wait states are not modelled.  Default model: tfl_resnet8
(the TFLite ResNet-8, every conv on CMSIS-NN).  Exit status 1 when a build fails or the
conv ratio is under 4.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCONS = os.path.join(os.path.dirname(sys.executable), "scons")
TARGETS = ["cortex-m55", "cortex-m7", "cortex-m4", "cortex-m33", "cortex-m3"]
GOAL = 4.0          # Helium MACs/instruction over scalar's, on the conv layers


def build(target, model, timeout):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([SCONS, "-Q", f"target={target}", f"model={model}"], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    path = os.path.join(ROOT, "build", target, model, "report.json")
    if proc.returncode or not os.path.isfile(path):
        print(f"  {target} {model}: build failed:\n" + "\n".join(proc.stdout.splitlines()[-12:]))
        return None
    with open(path) as f:
        rep = json.load(f)
    return rep if rep.get("total_insns") else None


def conv_rate(rep):
    """MACs per instruction over the conv layers that ran on CMSIS-NN."""
    convs = [l for l in rep["layers"] if l["op"] == "conv2d" and str(l.get("kernel", "")).startswith("cmsis-nn")]
    insns = sum(l["insns"] for l in convs)
    return (sum(l["macs"] for l in convs) / insns if insns else None), len(convs)


def show(model, reps):
    first = next(iter(reps.values()))
    width = max(len(l["name"]) for l in first["layers"])
    cols = "".join(f" {t:>22}" for t in reps)
    print(f"\n{model}: instructions (MACs/instruction) per layer")
    print(f"  {'layer':<{width}}  {'op':<14} {'MACs':>11}{cols}")
    for i, layer in enumerate(first["layers"]):
        cells = ""
        for rep in reps.values():
            l = rep["layers"][i]
            cells += f" {l['insns']:>12,} ({l['macs_per_insn'] if l['macs_per_insn'] is not None else '-':>6})"
        print(f"  {layer['name']:<{width}}  {layer['op']:<14} {layer['macs']:>11,}{cells}")
    cells = "".join(f" {rep['total_insns']:>12,} ({rep['macs_per_insn']:>6})" for rep in reps.values())
    print(f"  {'network':<{width}}  {'':<14} {first['total_macs']:>11,}{cells}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", default=["tfl_resnet8"])
    ap.add_argument("--targets", default=",".join(TARGETS),
                    help="cortex-m targets of targets.yaml, the Helium one first and the scalar one last")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per build")
    args = ap.parse_args()
    targets = args.targets.split(",")
    ok = True
    print("figures: instructions executed under qemu -icount, not cycles (qemu models no timing)")
    for model in args.models:
        reps = {}
        for target in targets:
            rep = build(target, model, args.timeout)
            if rep is None:
                ok = False
                continue
            reps[f"{target} ({rep['cortex_m']['cmsis_nn_path']})"] = rep
        if not reps:
            continue
        show(model, reps)
        rates = {name: conv_rate(rep) for name, rep in reps.items()}
        print(f"\n  conv layers on CMSIS-NN, MACs/instruction: "
              + ", ".join(f"{name} {r:.3f}" for name, (r, _) in rates.items() if r))
        names = list(reps)
        if len(names) > 1 and targets[0] in names[0] and targets[-1] in names[-1]:
            helium, scalar = rates[names[0]][0], rates[names[-1]][0]
            if helium and scalar:
                ratio = helium / scalar
                ok = ok and ratio >= GOAL
                print(f"  {names[0]} / {names[-1]} on the conv layers: {ratio:.2f}x "
                      f"(goal >= {GOAL:g}x: {'met' if ratio >= GOAL else 'NOT met'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
