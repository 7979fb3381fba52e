"""Per-layer and whole-network int8 MACs/cycle of the gap9 code on GVSoC: GAP9's own model and
pulp-open, side by side in one run.

Builds and runs each model for each target:platform of --runs in the work tree's build/ (as
`./nnscons` would; nothing outside build/ is written), then prints the reports' cycles:

    GAP9_GVSOC=DIR GVSOC=DIR/gvsoc .venv/bin/python benchmarks/gap9_cycles.py [--runs gap9:gvsoc-gap9,...] [model ...]

Default runs: gap9 on gvsoc-gap9 (GreenWaves' GVSoC model of GAP9: 9 cores, 128 KiB L1 with
bank conflicts; eligible convs on NE16), gap9-cluster there (every layer on the cluster), and
pulp-open on gvsoc-open (the open proxy: 8 RI5CY cores, 64 KiB L1). Default
models: resnet18 (layer by layer: its parameters do not fit L2 and neither simulator has L3)
and the MobileNet and MLPerf Tiny zoo entries of targets.yaml.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCONS = os.path.join(os.path.dirname(sys.executable), "scons")
MODELS = ["resnet18", "mobilenetv1", "mobilenetv2", "mobilenetv3", "kws_dscnn", "vww_mobilenetv1",
          "ic_resnet8", "ad_autoencoder"]


def build(target, platform, model, timeout):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([SCONS, "-Q", f"target={target}", f"model={model}", f"platform={platform}"],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    path = os.path.join(ROOT, "build", target, model, platform, "report.json")
    if proc.returncode or not os.path.isfile(path):
        print(f"  {target} {model}: build failed:\n" + "\n".join(proc.stdout.splitlines()[-12:]))
        return None
    with open(path) as f:
        return json.load(f)


def show(target, rep):
    width = max(len(layer["name"]) for layer in rep["layers"])
    print(f"\n{rep['model']} on {target} ({'layer by layer' if rep.get('layer_by_layer') else 'whole network'})")
    print(f"  {'layer':<{width}}  {'op':<14} {'engine':<7} {'MACs':>13} {'cycles':>13} {'MAC/cyc':>8} {'TCDM cont':>10}")
    for layer in rep["layers"]:
        note = f"  (slice {layer['slice']['channels']}/{layer['slice']['of']} ch, scaled)" if layer.get("slice") else ""
        mpc = layer.get("macs_per_cycle")
        print(f"  {layer['name']:<{width}}  {layer['op']:<14} {layer.get('engine', '-'):<7} {layer['macs']:>13,} "
              f"{layer.get('cycles', 0):>13,} {mpc if mpc is not None else '-':>8} "
              f"{layer.get('tcdm_contention', 0):>10,}{note}")
    print(f"  network: {rep['total_macs']:,} MACs in {rep.get('total_cycles') or 0:,} cycles = "
          f"{rep.get('macs_per_cycle')} MACs/cycle; check {'PASSED' if rep['passed'] else 'FAILED'}")


def compare(model, reps):
    """NE16 layers against the same layers in a cluster-only run of the same model (both on
    gvsoc-gap9): per layer the speed-up, and per layer class (kernel, input channels, size)."""
    ne = next((r for t, r in reps if any(l.get("engine") == "ne16" for l in r["layers"])), None)
    cl = next((r for t, r in reps if t.endswith("gvsoc-gap9") and r is not ne
               and not any(l.get("engine") == "ne16" for l in r["layers"])), None)
    if ne is None or cl is None:
        return
    base = {l["name"]: l for l in cl["layers"]}
    classes = {}
    print(f"\n{model}: NE16 layers against the cluster on the same layer (MACs/cycle)")
    print(f"  network: NE16 {ne.get('macs_per_cycle')}, cluster only {cl.get('macs_per_cycle')}")
    for l in ne["layers"]:
        c = base.get(l["name"])
        if l.get("engine") != "ne16" or not c or not c.get("cycles") or not l.get("cycles"):
            continue
        i, o = l["inputs"][0], l["output"]
        taps = round(l["macs"] / (o[1] * o[2] * o[3] * i[1]))      # kh * kw (square kernels)
        k = int(round(taps ** 0.5))
        stride = "/2" if o[2] < i[2] else ""
        key = f"{k}x{k}{stride} {i[1]}->{o[1]} {o[2]}x{o[3]}"
        print(f"  {l['name']:<24} {key:<22} NE16 {l['macs_per_cycle']:>7} cluster {c['macs_per_cycle']:>7} "
              f"{c['cycles'] / l['cycles']:5.2f}x")
        agg = classes.setdefault(key, [0, 0, 0])
        agg[0] += l["macs"]
        agg[1] += l["cycles"]
        agg[2] += c["cycles"]
    print("  per class:")
    for key, (macs, c_ne, c_cl) in classes.items():
        print(f"    {key:<22} NE16 {macs / c_ne:7.2f}  cluster {macs / c_cl:7.2f}  {c_cl / c_ne:5.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", default=MODELS)
    ap.add_argument("--runs", default="gap9:gvsoc-gap9,gap9-cluster:gvsoc-gap9,pulp-open:gvsoc-open",
                    help="target:platform pairs (kind gap9 targets; platform gvsoc-gap9 or gvsoc-open)")
    ap.add_argument("--timeout", type=int, default=7200, help="seconds per build")
    args = ap.parse_args()
    runs = [tuple(r.split(":", 1)) for r in args.runs.split(",")]
    summary = []
    for model in args.models:
        reps = []
        for target, platform in runs:
            rep = build(target, platform, model, args.timeout)
            if rep is None:
                continue
            target = f"{target}/{platform}"
            show(target, rep)
            reps.append((target, rep))
            convs = [l["macs_per_cycle"] for l in rep["layers"] if l["op"] == "conv2d" and l.get("macs_per_cycle")]
            summary.append((model, target, rep.get("macs_per_cycle"), rep.get("total_cycles"),
                            max(convs) if convs else None, rep["passed"]))
        compare(model, reps)
    print("\nmodel             target/platform       MACs/cycle  total cycles    best conv MAC/cyc  check")
    for model, target, mpc, cycles, best, passed in summary:
        print(f"{model:<17} {target:<21} {mpc if mpc is not None else '-':>10}  {cycles or 0:>13,}  "
              f"{best if best is not None else '-':>17}  {'PASSED' if passed else 'FAILED'}")
    print("figures: cycles of cluster core 0 per layer task (DMA waits and forks included, parameters already "
          "in L2); gvsoc-gap9 = GVSoC's GAP9 model (9 cores, 128 KiB L1, bank conflicts modelled), gvsoc-open = "
          "pulp-open (8 RI5CY cores, 64 KiB L1), the open proxy")


if __name__ == "__main__":
    main()
