"""The `cortex-m` target: Arm Cortex-M microcontrollers, bare metal, with Arm's CMSIS-NN.

The firmware is cross-compiled with Debian's arm-none-eabi-gcc for the chosen core
(`toolchain.cpu`: scalar M3, DSP M4/M7/M33, Helium/MVE M55) and runs under
qemu-system-arm on the Arm MPS2/MPS3 machine with that core (platform qemu), from the
project's own start-up, linker script and semihosting harness (kernels/cortex_m).

Layers: conv2d, depthwise conv2d, add, max and average pooling (and, on ONNX models, fully
connected) call CMSIS-NN where the layer's rule is TFLite's, which is what CMSIS-NN
computes: bit-exact with the reference there (layers.choice).  An ONNX model's layers
switch to that rule with cmsis_nn.numerics: cmsis (the default; rules.py: the reference
follows, the departures from ONNX's rule are counted) or keep ONNX's on the portable
kernels (onnx-exact).  Every other layer runs the portable C kernels the host target plans
(HWC, the graph's own arithmetic).  Per-layer instruction counts: insns.py; platform=board:
board.py.
"""
from __future__ import annotations

import functools
import os

from ...resources import data_path
from .. import base
from ...planning.buffers import plan_buffers
from .. import library
from ..host import TEMPLATES, network_spec, plan as _host_plan
from . import layers as cmsis_layers
from .cores import CPUS, KiB, STACK, WEIGHTS_SHARE, core  # noqa: F401  (the kind's core table)
from . import rules
from . import tool  # noqa: F401  (the kind's SCons Tool)
from .nodes import declare_nodes  # noqa: F401
from .schema import PLATFORMS, SCHEMA  # noqa: F401  (the kind's manifest keys)
from .tool import check_tools  # noqa: F401  (the kind's interface)

SINGLE_THREAD = data_path("kernels", "cortex_m", "nn_threads_single.c")


DEFAULTS = {
    "toolchain": {"cc": "arm-none-eabi-gcc", "cflags": ["-std=gnu11", "-O2", "-Wall"],
                  "ldflags": [], "cpu": "cortex-m55"},
    "memory": {"l1": 64 * KiB, "l2": 0},      # l2 0: half the core's data memory (the rest: the harness, stack)
    "tiling": {"l1_budget": 32 * KiB},
    "run": {"platform": "qemu", "timeout": 600, "qemu": "qemu-system-arm"},
    "cmsis_nn": {"numerics": rules.DEFAULT},
    "board": {"linker_script": "", "build": "make", "flasher": "openocd", "openocd": "openocd",
              "openocd_config": [], "pyocd": "pyocd", "pyocd_target": ""},
}


def options(target_cfg) -> dict:
    opts = base.merged_options(DEFAULTS, target_cfg)
    # the portable kernels the host target plans: one thread, no vector ISA of a PC
    opts["kernel"] = {"isa": "portable", "threads": 1}
    if not opts["memory"]["l2"]:
        opts["memory"]["l2"] = CPUS[opts["toolchain"]["cpu"]]["data"][1] // 2
    return opts


def plan(graph, cnames: dict, opts: dict, overrides: dict, where) -> base.TargetPlan:
    tp = _host_plan(graph, cnames, opts, overrides, where, auto=("portable",),
                    isa_codes={"portable": 1, "auto": 1}, kind="cortex-m", fuse_residual=False)
    from ..host.ops import depthwise
    kernels, calls = set(), set()
    # numerics cmsis: a layer of an ONNX model runs CMSIS-NN where it can, computed against
    # the graph's TFLite-rule view (rules.py): its parameters, weights .bin and golden
    view, switched = rules.tflite_view(graph), set()
    for lp in tp.layers:
        dw = depthwise(lp.layer, graph)
        key = cmsis_layers.choice(lp.layer, graph, dw)
        switch = False
        # numerics per layer: the layer's own `numerics` override, else cmsis_nn.numerics
        rule, _ = base.layer_key(lp.layer.name, "numerics", opts, overrides, where, "cmsis_nn")
        if key is None and rule == "cmsis" and rules.switchable(graph):
            key = cmsis_layers.choice(lp.layer, view, dw)
            switch = key is not None
        if key is None:
            lp.report["kernel"] = "portable"
            kernels.update(lp.kernels)
            calls |= base.template_calls(TEMPLATES, lp.template)
            continue
        layout = cmsis_layers.layout(lp.layer, view if switch else graph, key)
        spec = {k: v for k, v in lp.spec.items() if k not in ("gemm", "tile", "isa", "scratch_at")}
        spec["params"] = {section: {"dtype": dtype, "count": count, "offset": offset}
                          for section, dtype, count, offset in layout}
        if key == "add":
            from ...reference.tflite_fixed import TFLITE_LEFT_SHIFT
            spec["left_shift"] = TFLITE_LEFT_SHIFT
        spec["scratch"] = cmsis_layers.scratch_bound(key, spec)
        spec["scratch_at"] = {}
        lp.template, lp.kernels, lp.spec, lp.files = cmsis_layers.TEMPLATES[key], (), spec, []
        lp.param_layout, lp.param_bytes = layout, base.layout_bytes(layout)
        lp.pack, lp.pack_key = cmsis_layers.pack, "cmsis-nn"
        if switch:
            switched.add(lp.layer.name)
            lp.pack = functools.partial(cmsis_layers.pack_as, view)
            lp.pack_key = "cmsis-nn, TFLite's rule"
        spec["cmsis"] = key
        lp.report = {"kernel": "cmsis-nn " + cmsis_layers.FUNCTIONS[key],
                     "scratch_bound": spec["scratch"]}
        if switch:
            lp.report["rule"] = "tflite"
    # the arena's scratch region and the library's files follow the layers as chosen
    net = network_spec(graph, tp.layers, plan_buffers(graph), tp.network["lib"])
    lib = net["lib"]
    files = (library.generated_files(lib, TEMPLATES, net["total"], tp.layers, "network.c.j2", net, link_libs=["m"])
             + library.weights_files(lib, TEMPLATES, tp.layers))
    golden = base.binfiles.bin_name("golden", "%s")
    prefix, suffix = golden.split("%s")
    files.append(("src/main.c", "../cortex_m/main.c.j2",
                  {"lib": net["lib"], "max_layer_out": max(lp_out["output"]["size"] for lp_out in net["layers"]),
                   "bins": {"input": base.binfiles.INPUT, "golden_prefix": prefix, "golden_suffix": suffix}}))
    tp.network, tp.network_files = net, files
    # no POSIX threads on bare metal: nn_threads.h's single-thread implementation instead
    threads = {os.path.join(data_path("kernels", "common"), "nn_threads.c")}
    kernels = (kernels - threads) | ({SINGLE_THREAD} if kernels & threads else set())
    tp.kernels = [k for k in base.with_kernel_dependencies(kernels, calls) if k not in threads]
    tp.columns = [("kernel", "kernel"), ("insns", "insns"), ("MAC/insn", "macs_per_insn")]
    c = core(opts)
    tp.report["cortex_m"] = {"cpu": opts["toolchain"]["cpu"], "machine": c["machine"], "cmsis_nn_path": c["path"],
                             "cmsis_nn_layers": sum(lp.report["kernel"] != "portable" for lp in tp.layers)}
    tp.extra["link_libs"] = ["m"]
    tp.extra["cmsis_rule"] = {"switched": sorted(switched)}
    if switched:
        # the goldens follow the switched layers' rule (their keys: which layers switched)
        tp.reference = rules.reference(switched, view)
        tag = ["cmsis-nn numerics", sorted(switched)]
        tp.golden_tags = {layer.output: tag for layer in graph.layers}
        tp.extra["golden_py"] = [os.path.join(os.path.dirname(__file__), "rules.py")]
        tp.columns.append(("rule dep", "rule_departures"))    # outputs off the model's own rule
    tp.report["cortex_m"]["numerics"] = opts["cmsis_nn"]["numerics"]
    return tp

