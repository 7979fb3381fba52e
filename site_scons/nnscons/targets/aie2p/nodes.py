"""The aie2p target's nodes after codegen.

platform=npu, per mapped layer L (files under build/<t>/<m>/aie/L/):
    MLIR  L   src/layers/L_design.py  -> aie.mlir        (<python> L_design.py, stdout)
    KCC   L   src/layers/L.cc         -> L.o             (Peano clang++ or xchesscc_wrapper)
    AIECC L   aie.mlir + L.o          -> final.xclbin, insts.bin
    RUN       every xclbin/insts + bins -> run.log, output.npy (xrt_runner.py via pyxrt)
platform=emul, the network as a library lib/libnns_<m>.a, per mapped layer:
    CXX   L   src/layers/L.cc         -> obj/kernels/L_aie.o (g++ -DNNS_EMUL, the scalar kernel)
    CC    L   src/layers/L_emul.c     -> obj/layers/L.o  (its DMA patterns for nn_aie_emul.c)
  per host layer (fallback: host) src/layers/L_host.c, the network, the API, the weights' .S,
  kernels/aie2p/nn_aie_emul.c (and kernels/common), then AR; the host target's harness
  (src/main.c) LINKed against the library, RUN natively -> run.log, output.npy
Command lines are node signatures (varlist), so a new tool path or flag rebuilds.
"""
from __future__ import annotations

import os
import sys

from ... import binfiles
from ...resources import data_path
from ...builders.graph.nodes import py_sources
from .tools import find_tools

COMMON = data_path("kernels", "common")
HOST_KERNELS = [os.path.join(COMMON, f) for f in ("nn_conv2d.c", "nn_eltwise.c", "nn_linear.c", "nn_pool.c",
                                                  "nn_lut.c", "nn_broadcast.c", "nn_gather.c", "nn_softmax.c",
                                                  "nn_reduce.c", "nn_nary.c", "nn_island_pool.c")]


def layer_kind(lp) -> str:
    """npu (a mapped layer), view (a host-side reshape) or host (fallback: host)."""
    if lp.spec.get("op") == "reshape" and "inputs" not in lp.spec:
        return "view"
    return "host" if "why_not_npu" in lp.spec else "npu"

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = data_path("kernels", "aie2p")
COMMON = data_path("kernels", "common")     # nn_requant.h: the requantization rules
PEANO_FLAGS = ["-O2", "-std=c++20", "--target=aie2p-none-unknown-elf", "-Wno-parentheses",
               "-Wno-attributes", "-Wno-macro-redefined", "-DNDEBUG"]


def kernel_command(tools: dict, compiler: str, src: str, obj: str) -> list:
    inc = ["-I" + os.path.join(tools["mlir_aie_dir"], "include"), "-I" + KERNELS, "-I" + COMMON]
    if compiler == "chess":
        return [tools["chess"], "aie2p"] + inc + ["-c", src, "-o", obj]
    return [os.path.join(tools["peano_dir"], "bin", "clang++")] + PEANO_FLAGS + inc + ["-c", src, "-o", obj]


def aiecc_command(tools: dict, compiler: str) -> list:
    cmd = [tools["aiecc"], "--aie-generate-xclbin", "--aie-generate-npu-insts", "--no-compile-host"]
    if compiler == "chess":
        cmd += ["--xchesscc", "--xbridge"]
    else:
        cmd += ["--no-xchesscc", "--no-xbridge", "--peano", tools["peano_dir"]]
    return cmd + ["--xclbin-name=final.xclbin", "--npu-insts-name=insts.bin", "aie.mlir"]


def declare_nodes(env, session, common) -> dict:
    b = session.build_dir
    opts = session.options
    env = env.Clone()
    header = os.path.join(KERNELS, "nn_aie_gemm.h")
    mapped = [lp for lp in session.plan.layers if layer_kind(lp) == "npu"]
    hosted = [lp for lp in session.plan.layers if layer_kind(lp) == "host"]
    files = {lp.cname: common.layer_files[lp.cname] for lp in mapped}
    files_all = common.layer_files

    def src(lp, suffix):
        return files[lp.cname][f"src/layers/{lp.cname}{suffix}"]

    if opts["run"]["platform"] == "emul":
        return _emul_nodes(env, session, common, mapped, src)
    firmware, run_inputs = [], []
    tools = find_tools(env["ENV"], opts)
    compiler = opts["toolchain"]["kernel_compiler"]
    pyenv = {"PYTHONPATH": os.pathsep.join(p for p in (
        os.path.join(tools["mlir_aie_dir"], "python"), env["ENV"].get("PYTHONPATH", "")) if p)}
    for lp in mapped:
        d = os.path.join(b, "aie", lp.cname)
        label = common.label[lp.cname]
        mlir = env.NnsAieCmd(os.path.join(d, "aie.mlir"), src(lp, "_design.py"),
                             NNS_CMD=[tools["python"], str(src(lp, "_design.py"))],
                             NNS_STDOUT=True, NNS_ENV=pyenv, NNS_VERB="MLIR", NNS_LABEL=label)
        obj = os.path.join(d, lp.cname + ".o")
        kobj = env.NnsAieCmd(obj, src(lp, ".cc"),
                             NNS_CMD=kernel_command(tools, compiler, str(src(lp, ".cc")), obj),
                             NNS_VERB="KCC", NNS_LABEL=label)
        env.Depends(kobj, [header, os.path.join(COMMON, "nn_requant.h")])
        xclbin = env.NnsAieCmd([os.path.join(d, "final.xclbin"), os.path.join(d, "insts.bin")],
                               mlir + kobj, NNS_CMD=aiecc_command(tools, compiler), NNS_CWD=d,
                               NNS_ENV=pyenv, NNS_VERB="AIECC", NNS_LABEL=label)
        firmware += xclbin
        run_inputs.append(src(lp, "_dma.json"))
    run_cmd = [tools["python"], os.path.join(HERE, "xrt_runner.py")]
    run_deps = py_sources("targets/aie2p/xrt_runner.py", "targets/aie2p/runner.py",
                          "targets/aie2p/host_layers.py")
    if hosted:
        # fallback: host -- the host target's C kernels, once, as a shared library
        so = os.path.join(b, "host", "nn_host.so")
        cmd = ([opts["toolchain"]["cc"]] + list(opts["toolchain"]["cflags"])
               + ["-shared", "-fPIC", "-Ikernels/common", "-o", so] + HOST_KERNELS)
        node = env.NnsAieCmd(so, HOST_KERNELS, NNS_CMD=cmd, NNS_VERB="CC",
                             NNS_LABEL="host kernels")
        env.Depends(node, [os.path.join(COMMON, h) for h in ("nn_kernels.h", "nn_requant.h", "nn_window.h")])
        firmware += node
        run_inputs += [files_all[lp.cname][f"src/layers/{lp.cname}_host.json"] for lp in hosted]
    run = env.NnsAieRun([os.path.join(b, "run.log"), os.path.join(b, binfiles.output_array(len(session.graph.outputs))),
                          binfiles.output_path(b)],
                        firmware + run_inputs + list(common.network_files.values())
                        + common.input + common.weights + common.goldens,
                        NNS_CMD=run_cmd, NNS_VERB="RUN", NNS_LABEL=session.model_cfg.name)
    env.Depends(run, run_deps)
    # no C library for the NPU yet: the library alias is the header (what to ship)
    return {"firmware": firmware, "run": run,
            "library": [n for p, n in common.network_files.items() if p.endswith(".h")]}


def _emul_nodes(env, session, common, mapped, src) -> dict:
    """platform=emul: the network as a library (each NPU layer's kernel compiled natively
    with its emulated DMAs, the host layers' C, the network, the weights linked in) and the
    host target's harness on it, run on this machine."""
    from ...builders.graph.nodes import declare_library
    from .. import library
    b = session.build_dir
    opts = session.options
    tc = opts["toolchain"]
    t = session.target_cfg.name
    quiet = not env["NNS_VERBOSE"]
    env = env.Clone(CC=tc["cc"], LINK=tc["cc"], CXX=tc["cxx"], CFLAGS=list(tc["cflags"]),
                    CXXFLAGS=list(tc["cxxflags"]) + ["-fno-exceptions", "-fno-rtti"],
                    ASPPFLAGS=[library.weights_include(b)])
    env.Append(CPPPATH=[KERNELS, COMMON, os.path.join(b, "include")])
    kernels = []
    for lp in mapped:            # the AIE kernel, scalar, as the emulated cores call it
        obj = os.path.join(b, "obj", "kernels", lp.cname + "_aie.o")
        node = env.Object(obj, src(lp, ".cc"), CPPDEFINES=["NNS_EMUL"],
                          CXXCOMSTR=f"CXX {common.label[lp.cname]} [{t}]" if quiet else None)
        env.Depends(node, [os.path.join(KERNELS, "nn_aie_gemm.h"), os.path.join(COMMON, "nn_requant.h")])
        kernels += node
    lib_nodes, harness = declare_library(env, session, common, os.path.join(b, "obj"), extra_objects=kernels)
    firmware = env.Program(os.path.join(b, "firmware"), harness + lib_nodes[:1],
                           LINKCOMSTR=f"LINK firmware [{t}]" if quiet else None)
    run = env.NnsNativeRun([os.path.join(b, "run.log"), os.path.join(b, binfiles.output_array(len(session.graph.outputs))),
                          binfiles.output_path(b)],
                           firmware + common.input + common.goldens,
                           NNS_VERB="RUN", NNS_LABEL=session.model_cfg.name)
    # the design and the DMA description are this layer's product too: build them
    env.Depends(run, [src(lp, s) for lp in mapped for s in ("_dma.json", "_design.py")])
    return {"firmware": firmware, "run": run, "library": lib_nodes}
