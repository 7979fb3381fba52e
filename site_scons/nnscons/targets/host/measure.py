"""Per-layer kernel variant chosen by measurement on the running CPU (`kernel.choose: measure`).

For each generated layer under `isa: auto`, every variant the layer can hold (avx512vnni,
avx512vnni512, avxvnni, avx2u8, avx2, portable) is timed on this CPU as a standalone program: the layer's own
source forced to that variant, its weights packed for it, one thread, process CPU time
(other work on the machine slows wall time, not the CPU time a run takes), the variants
alternated in rounds and the median of each taken.  The fastest goes first in the layer's
dispatch order (the others follow in CPUID order, so the library still runs on any
x86-64).  A variant this CPU cannot run is still compiled into the layer (when it is one
of the CPUID-ordered ones) but not timed: the cache records it with the reason.

The results are cached in the build tree per CPU (build/<target>/<model>/variants/<cpu
key>.json; the key is vendor, family, model and the flags the variants need, so another CPU
measures again), one entry per layer shape class (geometry, blocking, epilogue, fused add,
and avx2u8's correction quads, which depend on the weights).  An entry is written only once
all its variants have been timed, and the file is replaced atomically: an interrupted
measurement leaves no entry behind, and a file that is not a complete cache of this version
is ignored (measured again).  A layer's `isa` key, and an `isa` in its tuning file entry,
override the measurement.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import tempfile

from ...builders.run.hostrun import run_program
from ...cpuinfo import cpu_info  # noqa: F401  (the cache key's CPU; tests read it here)
from ...errors import UserError

# the cache's format and what its timings mean: 2 since the timed program's weights sit on
# cache lines as the library links them (timings of version 1 paid split loads)
VERSION = 2
CHOICES = ("cpuid", "measure")
# the variants that may be measured for a layer, in CPUID order (gemm.AUTO, avx2u8 after
# avx512vnni: it needs only AVX2)
ORDER = ("avx512vnni", "avx512vnni512", "avxvnni", "avx2u8", "avx2", "portable")
# /proc/cpuinfo flags each variant's run-time check needs (kernels/common/nn_gemm.h)
NEEDS = {"portable": (), "avx2": ("avx2",), "avx2u8": ("avx2",), "avx512vnni": ("avx512_vnni", "avx512vl"),
         "avx512vnni512": ("avx512_vnni", "avx512vl", "avx512bw"), "avxvnni": ("avx_vnni",)}   # bw: Winograd's zmm input transform
# the vector width each variant's microkernels run (bits; 0: scalar C)
WIDTH = {"portable": 0, "avx2": 256, "avx2u8": 256, "avx512vnni": 256, "avx512vnni512": 512, "avxvnni": 256}
# an entry's timed kernels: variants, or (autochoice.py) a layer's Winograd and direct kernels
LABELS = ORDER + ("winograd", "direct")
ROUNDS = 5          # alternated rounds per variant
REPS = 7            # timed samples per round (median)
INNER_MACS = 20_000_000   # a sample is at least this many MACs of calls (small layers: several)

# the timing programs' opening: one process's CPU time, the median's comparison
_TIMING = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
"""

_MAIN = _TIMING + r"""
static int8_t in[%(in_size)d], out[%(out_size)d], res[%(out_size)d];
static uint8_t params[%(params)d + 1] __attribute__((aligned(%(align)d)));   /* as the library links it */
static uint8_t scratch[%(scratch)d + 64] __attribute__((aligned(64)));
int nn_measure_variant = -1;   /* argv[2]: the index of the variant to run (-1: the dispatch's) */
int main(int argc, char **argv)
{
    double t[%(reps)d];
    const int8_t *ins[2] = { in, res };   /* res: a fused residual add's other operand */
    nn_exec_t x = { scratch, 0, 0 };
    FILE *f = fopen(argv[1], "rb");
    unsigned r = 1;
    int i;
    if (argc < 2 || !f || fread(params, 1, %(params)d, f) != %(params)d)
        return 2;
    if (argc > 2)
        nn_measure_variant = atoi(argv[2]);
    fclose(f);
    for (i = 0; i < %(in_size)d; ++i) {
        r = r * 1664525u + 1013904223u;
        in[i] = (int8_t)(r >> 24);
        if (i < %(out_size)d)
            res[i] = (int8_t)(r >> 16);
    }
    %(symbol)s(ins, out, params, &x);
    for (i = 0; i < %(reps)d; ++i) {   /* each sample: `inner` calls (a small layer's last microseconds) */
        const double t0 = cpu_ms();
        for (int j = 0; j < %(inner)d; ++j)
            %(symbol)s(ins, out, params, &x);
        t[i] = (cpu_ms() - t0) / %(inner)d;
    }
    qsort(t, %(reps)d, sizeof t[0], cmp);
    printf("variant %%s median_ms %%.5f\n", x.variant ? x.variant : "none", t[%(reps)d / 2]);
    return 0;
}
"""


def cpu_key(info: dict) -> str:
    """The cache's name for a CPU: the same key means the same measurements hold."""
    need = sorted({f for fl in NEEDS.values() for f in fl} & set(info["flags"]))
    h = hashlib.sha1(json.dumps([info["model_name"], need]).encode()).hexdigest()[:10]
    return f"{info['vendor']}-f{info['family']}-m{info['model']}-{h}".replace(" ", "_").replace("/", "_")


def cannot_run(variant: str, info: dict) -> str | None:
    """Why this CPU cannot run the variant (None: it can)."""
    missing = [f for f in NEEDS[variant] if f not in info["flags"]]
    if missing:
        return f"this CPU ({info['model_name']}) lacks {', '.join(missing)}"
    return None


def running(variants, info: dict) -> str | None:
    """The variant a layer's run-time dispatch picks on this CPU: the first it can run."""
    return next((v for v in variants if cannot_run(v, info) is None), None)


def _generator_digest() -> str:
    """The kernel generator's sources: a changed generator measures again."""
    import glob
    h = hashlib.sha1()
    for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "kernelgen", "*.py"))):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


GENERATOR = _generator_digest()


def shape_key(gemm_spec: dict, correction_quads) -> str:
    """One cache entry per layer shape class: what its variants' speed depends on (and the
    generator that wrote them)."""
    gm = gemm_spec
    what = {"generator": GENERATOR, "geom": gm["geom"], "blocking": gm["blocking"], "band": gm.get("band"), "epilogue": gm.get("epilogue"),
            "residual": bool(gm.get("residual")), "u8": gm.get("u8"), "correction_quads": correction_quads}
    if gm.get("wino"):      # a Winograd layer's variants (kernelgen.wino): an entry of their own
        what["wino"] = {k: gm["wino"][k] for k in ("band",)}
    return hashlib.sha1(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def cache_path(build_dir: str, info: dict) -> str:
    return os.path.join(build_dir, "variants", cpu_key(info) + ".json")


def load(path: str, info: dict) -> dict:
    """{shape key: entry} of a complete cache of this CPU and version; {} otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("version") != VERSION or doc.get("cpu_key") != cpu_key(info):
        return {}
    layers = doc.get("layers")
    if not isinstance(layers, dict):
        return {}
    return {k: e for k, e in layers.items() if _entry_ok(e)}


def _entry_ok(e) -> bool:
    try:
        return (e["best"] in LABELS and isinstance(e["median_ms"], dict) and e["best"] in e["median_ms"]
                and all(v in LABELS and float(ms) > 0 for v, ms in e["median_ms"].items()))
    except (KeyError, TypeError, ValueError):
        return False


def save(path: str, info: dict, entries: dict) -> None:
    """Replace the cache atomically (a reader sees the old file or the new one, whole)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    doc = {"version": VERSION, "cpu_key": cpu_key(info),
           "cpu": {k: info[k] for k in ("vendor", "family", "model", "model_name")},
           "flags": sorted({f for fl in NEEDS.values() for f in fl} & set(info["flags"])),
           "layers": entries}
    fd, tmp = tempfile.mkstemp(prefix=".variants-", dir=os.path.dirname(path))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def order(best: str, candidates) -> list:
    """The layer's dispatch order: the measured best, then the others in CPUID order."""
    return [best] + [v for v in candidates if v != best]


def choose(entry: dict | None, candidates, info: dict) -> list | None:
    """The dispatch order from a cache entry (None: no usable entry, measure).  The entry's
    best must be among this layer's candidates and runnable here."""
    if not entry or entry.get("best") not in candidates or cannot_run(entry["best"], info):
        return None
    return order(entry["best"], candidates)


def _compile(cc: str, src: str, exe: str) -> None:
    from ...resources import data_path
    common = os.path.abspath(data_path("kernels", "common"))
    cmd = [cc, "-std=c99", "-O2", "-I", common, src, os.path.join(common, "nn_threads.c"), "-o", exe,
           "-lpthread", "-lm"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise UserError(f"measuring kernel variants: {' '.join(cmd)} failed:\n{proc.stdout[-3000:]}")


def program(spec: dict, blob: bytes, scratch: int, work: str, tag: str, cc: str) -> list:
    """Compile the layer's standalone timing program; its command line."""
    from ... import kernelgen
    from .gemm import SECTION_ALIGN
    g = spec["gemm"]["geom"]
    src = "#define _POSIX_C_SOURCE 200809L\n#define NN_MEASURE_VARIANT 1\n" + kernelgen.layer_source(spec) + _MAIN % {
        "align": SECTION_ALIGN,
        "in_size": max(g["ih"] * g["iw"] * g["ic"], g["oh"] * g["ow"] * g["oc"]),
        "out_size": g["oh"] * g["ow"] * g["oc"], "params": len(blob), "reps": REPS,
        "scratch": max(scratch, 1), "symbol": spec["symbol"],
        "inner": max(1, INNER_MACS // max(1, g["oh"] * g["ow"] * g["oc"] * g["kh"] * g["kw"] * g["ic"]))}
    base = os.path.join(work, tag)
    with open(base + ".bin", "wb") as f:
        f.write(blob)
    with open(base + ".c", "w", encoding="utf-8") as f:
        f.write(src)
    _compile(cc, base + ".c", base)
    return [base, base + ".bin"]


def alternate(name: str, runs: dict, timeout: int) -> dict:
    """{label: median ms} of timing programs run in ROUNDS alternated rounds.  runs: {label:
    (command line, the `variant` names its output may report)}; a failed run or an output
    naming another kernel is the user's error with the program's text."""
    times = {label: [] for label in runs}
    for _ in range(ROUNDS):
        for label, (cmd, names) in runs.items():
            status, text = run_program(cmd, timeout)
            f = text.split()
            if status != 0 or len(f) < 4 or f[0] != "variant" or f[1] not in names:
                raise UserError(f"measuring layer '{name}', kernel {label}: status {status}: {text[-2000:]}")
            times[label].append(float(f[3]))
    return {label: round(statistics.median(t), 5) for label, t in times.items()}


def time_variants(name: str, build: tuple, info: dict, cc: str, timeout: int) -> dict:
    """build: (spec, weights blob, scratch bytes) of one layer holding every candidate variant
    (spec['gemm']['variants']).  One program times each variant this CPU runs (forced by its
    index), in alternated rounds; the cache entry."""
    variants = build[0]["gemm"]["variants"]
    skipped = {v: r for v in variants if (r := cannot_run(v, info))}
    with tempfile.TemporaryDirectory(prefix="nnscons-variants-") as work:
        cmd = program(*build, work, "layer", cc)
        med = alternate(name, {v: (cmd + [str(variants.index(v))], (v, "wino-" + v))
                               for v in variants if v not in skipped}, timeout)
    best = min(med, key=lambda v: (med[v], ORDER.index(v)))
    return {"layer": name, "median_ms": med, "best": best, "skipped": skipped, "threads": 1,
            "clock": "process CPU time"}


def chosen(layer, orig, graph, g: dict, spec: dict, build, own: dict, tuning: dict, opts: dict) -> tuple:
    """(plan_layer result, layer spec) of a generated layer under `kernel.choose: measure`:
    `build(own=..., auto=...)` plans the layer again with a variant order.  A forced isa (the
    layer's or the target's `isa`, or `isa` in the layer's tuning entry) is kept; so is a layer
    only the portable variant can run (its vector epilogue is not proven safe)."""
    from .gemm import AUTO
    if spec["gemm"]["isa"] != "auto":      # forced: the layer's key, its tuning entry or the target's
        return g, spec
    if spec["gemm"]["variants"] == ["portable"] or "build" not in opts:
        return g, spec
    from .gemm import winograd_key
    # the direct kernels' variants (an unset winograd key: Winograd is timed apart, below)
    own_d = own if winograd_key(layer, own, tuning, opts) is not None else dict(own, winograd=False)
    g_all, spec_all = build(own=own_d, auto=ORDER)
    cands = spec_all["gemm"]["variants"]
    info = cpu_info()
    path = cache_path(opts["build"]["dir"], info)
    entries = load(path, info)
    key = shape_key(spec_all["gemm"], g_all["report"]["gemm"].get("u8", {}).get("correction_quads"))
    entry = _cached_entry(layer.name, "", orig, graph, g_all, spec_all, key, cands, (path, info, entries), opts)
    best = entry["best"]
    g, spec = build(own=own_d, auto=tuple([best] + [v for v in AUTO if v != best and v in cands]))
    g["report"]["gemm"]["choice"] = {"by": "measure", "median_ms": entry["median_ms"], "skipped": entry["skipped"],
                                     "cache": os.path.relpath(path, opts["build"]["dir"])}
    return _winograd_or_direct(layer, orig, graph, g, spec, build, own, tuning, opts, entry, (path, info, entries))


def _cached_entry(name, what, orig, graph, g, spec, key, cands, cache, opts) -> dict:
    """The variant cache's entry `key` when it still decides among `cands`, else every variant
    of layer `name` timed on one core, cached and printed (`VARIANTS <name><what>: ...`)."""
    from ... import kernelgen
    path, info, entries = cache
    entry = entries.get(key)
    if choose(entry, cands, info) is None:
        spec["gemm"]["threads"] = 1          # the variants' speed on one core
        blob = g["pack"](orig, graph, g["layout"])
        entry = time_variants(name, (spec, blob, kernelgen.scratch(spec)["bytes"]), info,
                              opts["toolchain"]["cc"], opts["run"]["timeout"])
        entries[key] = entry
        save(path, info, entries)
        print(f"VARIANTS {name}{what}: " + ", ".join(f"{v} {ms:.4f} ms" for v, ms in entry["median_ms"].items())
              + f" -> {entry['best']}" + "".join(f"; {v} not timed: {r}" for v, r in entry["skipped"].items()))
    return entry


def _winograd_or_direct(layer, orig, graph, g, spec, build, own, tuning, opts, direct, cache) -> tuple:
    """A 3x3 stride-1 layer with no `winograd` key: its Winograd variants (kernelgen.wino)
    timed as the direct ones are (their own cache entry); the faster kernel wins."""
    from ... import kernelgen
    from .gemm import winograd_key
    if winograd_key(layer, own, tuning, opts) is not None or not kernelgen.wino.supports(spec["gemm"]["geom"]):
        return g, spec
    g_w, spec_w = build(own=dict(own, winograd=True), auto=ORDER)     # the zmm variant too
    if not spec_w["gemm"].get("wino"):        # not allowed (bound, epilogue): the report says why
        g["report"]["gemm"]["winograd"] = g_w["report"]["gemm"]["winograd"]
        return g, spec
    entry = _cached_entry(layer.name, " winograd", orig, graph, g_w, spec_w, shape_key(spec_w["gemm"], None),
                          spec_w["gemm"]["variants"], cache, opts)
    if entry["median_ms"][entry["best"]] >= direct["median_ms"][direct["best"]]:
        g["report"]["gemm"]["winograd"] = f"measured slower ({entry['median_ms'][entry['best']]} ms)"
        return g, spec
    best = entry["best"]
    g_w, spec_w = build(own=dict(own, winograd=True), auto=(best,))
    g_w["report"]["gemm"]["choice"] = {"by": "measure", "median_ms": direct["median_ms"],
                                       "winograd_ms": entry["median_ms"], "skipped": entry["skipped"],
                                       "cache": os.path.relpath(cache[0], opts["build"]["dir"])}
    g_w["report"]["gemm"]["winograd"] = "measured faster"
    return g_w, spec_w


# the depthwise kernels (kernels/host/nn_simd.c, nn_dw_vnni.c): each forced by its isa code
# in the timing program; the measured order as the code the layer is built with
DW_FORCE = {"avx512vnni": 3, "avx2": 4, "portable": 1}
DW_CODE = {"avx512vnni": 0, "avx2": 4, "portable": 1}     # 0: VNNI, AVX2, portable; 4: AVX2, portable

_MAIN_DW = _TIMING + r"""
#include "nn_simd.h"
static int8_t in[%(in_size)d], out[%(out_size)d];
static uint8_t params[%(params)d + 64] __attribute__((aligned(64)));
static uint8_t scratch[%(scratch)d + 64] __attribute__((aligned(64)));
static nn_epi_t epi[%(epis)d];
static const nn_hwc_conv_cfg_t cfg = {
    .in_c = %(c)d, .in_h = %(ih)d, .in_w = %(iw)d, .out_c = %(c)d, .out_h = %(oh)d, .out_w = %(ow)d,
    .k_h = %(kh)d, .k_w = %(kw)d, .stride_h = %(sh)d, .stride_w = %(sw)d, .dil_h = %(dh)d, .dil_w = %(dw)d,
    .pad_top = %(pt)d, .pad_left = %(pl)d, .groups = %(c)d,
    .in_zp = %(in_zp)d, .out_zp = %(out_zp)d, .act_min = %(lo)d, .act_max = %(hi)d,
};
static const char *layer(int isa)
{
    return nn_dwconv_band_fast(isa, &cfg, in, (const int8_t *)(params + %(w)d), %(bias)s,
                               (const int32_t *)(const void *)(params + %(mult)d),
                               (const int32_t *)(const void *)(params + %(shift)d), out, %(band)d,
                               (int16_t *)(void *)(scratch + %(buf)d), %(wp)d, (int16_t *)(void *)(scratch + %(wq)d),
                               epi, params + %(vnni)d, params + %(avx2dw)d, scratch + %(vq)d, %(vq_bytes)d);
}
int main(int argc, char **argv)
{
    double t[%(reps)d];
    FILE *f = fopen(argv[1], "rb");
    unsigned r = 1;
    int i, isa;
    const char *ran;
    if (argc < 3 || !f || fread(params, 1, %(params)d, f) != %(params)d)
        return 2;
    fclose(f);
    isa = atoi(argv[2]);
    for (i = 0; i < %(in_size)d; ++i) {
        r = r * 1664525u + 1013904223u;
        in[i] = (int8_t)(r >> 24);
    }
    ran = layer(isa);
    for (i = 0; i < %(reps)d; ++i) {
        const double t0 = cpu_ms();
        for (int j = 0; j < %(inner)d; ++j)
            layer(isa);
        t[i] = (cpu_ms() - t0) / %(inner)d;
    }
    qsort(t, %(reps)d, sizeof t[0], cmp);
    printf("variant %%s median_ms %%.5f\n", ran, t[%(reps)d / 2]);
    return 0;
}
"""


def _dw_digest() -> str:
    """The depthwise kernels' sources: changed kernels measure again."""
    from ...resources import data_path
    h = hashlib.sha1()
    for path in (data_path("kernels", "host", "nn_simd.c"), data_path("kernels", "host", "nn_dw_vnni.c"),
                 data_path("kernels", "common", "nn_gemm.h")):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def _dw_program(spec: dict, blob: bytes, work: str, cc: str) -> list:
    """The depthwise layer's standalone timing program (nn_dwconv_band_fast on the layer's
    geometry, weights and scratch layout, the kernel forced by argv[2]); its command line."""
    from ...resources import data_path
    i, o, par, at = spec["inputs"][0], spec["out"], spec["params"], spec["scratch_at"]
    (kh, kw), (sh, sw), (dh, dw) = spec["kernel"], spec["stride"], spec["dilation"]
    macs = o["h"] * o["w"] * o["c"] * kh * kw
    src = _MAIN_DW % {
        "in_size": i["h"] * i["w"] * i["c"], "out_size": o["h"] * o["w"] * o["c"], "params": len(blob),
        "scratch": spec["scratch"], "epis": i["c"] // 64 + 1, "c": i["c"], "ih": i["h"], "iw": i["w"],
        "oh": o["h"], "ow": o["w"], "kh": kh, "kw": kw, "sh": sh, "sw": sw, "dh": dh, "dw": dw,
        "pt": spec["pads"][0], "pl": spec["pads"][1], "in_zp": i["zp"], "out_zp": o["zp"],
        "lo": spec["act"][0], "hi": spec["act"][1], "w": par["weight"]["offset"],
        "bias": f"(const int32_t *)(const void *)(params + {par['bias']['offset']})" if "bias" in par else "NULL",
        "mult": par["mult"]["offset"], "shift": par["shift"]["offset"], "band": spec["tile"]["tile_oh"],
        "buf": at["buf"], "wq": at["wq"], "vq": at["vq"], "vq_bytes": at["vq_bytes"], "vnni": par["vnni"]["offset"],
        "avx2dw": par["avx2dw"]["offset"],
        "wp": max(i["w"] + spec["pads"][1], (o["w"] - 1) * sw + (kw - 1) * dw + 1),
        "reps": REPS, "inner": max(1, INNER_MACS // max(1, macs))}
    base = os.path.join(work, "dw")
    with open(base + ".bin", "wb") as f:
        f.write(blob)
    with open(base + ".c", "w", encoding="utf-8") as f:
        f.write(src)
    host, common = data_path("kernels", "host"), data_path("kernels", "common")
    cmd = [cc, "-std=c99", "-O2", "-I", common, "-I", host, base + ".c", os.path.join(host, "nn_simd.c"),
           os.path.join(host, "nn_dw_vnni.c"), os.path.join(common, "nn_eltwise.c"),
           os.path.join(common, "nn_hwc_pool.c"), "-o", base, "-lm"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise UserError(f"measuring depthwise kernels: {' '.join(cmd)} failed:\n{proc.stdout[-3000:]}")
    return [base, base + ".bin"]


def chosen_depthwise(name: str, spec: dict, variants: list, blob: bytes, opts: dict) -> tuple:
    """(isa code, choice report) of a depthwise layer under `kernel.choose: measure` and isa
    auto: its kernels (variants, the dispatch order nn_dwconv_band_fast has for isa auto)
    timed as the generated layers' are (one program, each kernel forced in alternated rounds,
    process CPU time, medians), cached in the same file per layer shape class; the fastest
    first (DW_CODE)."""
    info = cpu_info()
    path = cache_path(opts["build"]["dir"], info)
    entries = load(path, info)
    what = {"depthwise": _dw_digest(), "variants": variants, "params": {k: v["count"] for k, v in spec["params"].items()},
            **{k: spec[k] for k in ("inputs", "out", "kernel", "stride", "dilation", "pads", "act", "tile")}}
    key = "dw-" + hashlib.sha1(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]
    entry = entries.get(key)
    if choose(entry, variants, info) is None:
        skipped = {v: r for v in variants if (r := cannot_run(v, info))}
        with tempfile.TemporaryDirectory(prefix="nnscons-variants-") as work:
            cmd = _dw_program(spec, blob, work, opts["toolchain"]["cc"])
            med = alternate(name, {v: (cmd + [str(DW_FORCE[v])], (v,)) for v in variants if v not in skipped},
                            opts["run"]["timeout"])
        entry = {"layer": name, "median_ms": med, "best": min(med, key=lambda v: (med[v], ORDER.index(v))),
                 "skipped": skipped, "threads": 1, "clock": "process CPU time"}
        entries[key] = entry
        save(path, info, entries)
        print(f"VARIANTS {name}: " + ", ".join(f"{v} {ms:.4f} ms" for v, ms in entry["median_ms"].items())
              + f" -> {entry['best']}" + "".join(f"; {v} not timed: {r}" for v, r in entry["skipped"].items()))
    return DW_CODE[entry["best"]], {"by": "measure", "median_ms": entry["median_ms"], "skipped": entry["skipped"],
                                    "cache": os.path.relpath(path, opts["build"]["dir"])}
