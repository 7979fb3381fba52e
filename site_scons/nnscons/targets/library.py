"""The network as a library a firmware links: names, the header's facts, the files.

Every target's build produces lib/libnns_<model>.a, include/nns_<model>.h and, beside the
library, nns_<model>.cmake (an imported target nns::<model>) and nns_<model>.mk (Make
variables).  The project's own test program is a harness linked against that library.
Here: what the generated C needs to know about the network (names as C identifiers, sizes,
shapes, quantization, layout), and the file names; targets/<kind>/ declares the nodes.
"""
from __future__ import annotations

import os

import numpy as np

from .. import binfiles
from ..names import c_model_name  # noqa: F401  (the plans name the model's C symbols with it)
from ..resources import data_path

# the header, the API source, the CMake and Make files: the host's templates, for every target
TEMPLATES = data_path("templates", "host")


def files(model_cname: str, lib_dir: str = "lib") -> dict:
    """Paths (under the build folder) of the library's files.  lib_dir: where the archive
    and its .cmake/.mk go (a target with several platforms builds one archive per platform,
    e.g. k210's `qemu/lib`); the header and the sources are shared."""
    return {"lib": f"{lib_dir}/libnns_{model_cname}.a", "header": f"include/nns_{model_cname}.h",
            "cmake": f"{lib_dir}/nns_{model_cname}.cmake", "mk": f"{lib_dir}/nns_{model_cname}.mk",
            "source": f"src/nns_{model_cname}.c", "api": f"src/nns_{model_cname}_api.c"}


def generated_files(lib: dict, templates_dir: str, arena_size: int, layers, source_template: str,
                    source_spec: dict, lib_dirs=("lib",), link_libs=()) -> list:
    """The library's generated files [(path, template relative to templates_dir, spec)]: the
    target's network source (source_template: its run_with_callback), and from the host's
    templates the header, the API source (names, run, run_float), and per archive folder in
    lib_dirs the .cmake and .mk.  layers: LayerPlans in execution order.  The header depends
    on sizes and I/O only, so a layer's edit never regenerates it.  lib_dirs may also be a
    dict {folder: {"link_libs": [...], "cflags": [...], "include_dirs": [...]}}: what an
    application of that archive links and compiles with besides the header's folder (one
    archive per platform; include_dirs relative to the folder)."""
    f = files(lib["model"])
    header_lib, lib = lib, core(lib)
    rel = os.path.relpath(TEMPLATES, templates_dir)
    t = lambda name: name if rel == "." else os.path.join(rel, name)  # noqa: E731
    out = [(f["source"], source_template, source_spec),
           (f["header"], t("nns.h.j2"), {"lib": header_lib, "arena_size": arena_size, "num_layers": len(layers)}),
           (f["api"], t("api.c.j2"), {"lib": lib, "layers": [{"name": lp.layer.name, "cname": lp.cname}
                                                              for lp in layers]})]
    per_dir = lib_dirs if isinstance(lib_dirs, dict) else {d: {} for d in lib_dirs}
    for d, flags in per_dir.items():
        lib_spec = {"lib": dict(lib, link_libs=list(flags.get("link_libs", link_libs)),
                                cflags=list(flags.get("cflags", ())), include_rel=os.path.relpath("include", d),
                                include_dirs=list(flags.get("include_dirs", ())))}
        out += [(files(lib["model"], d)["cmake"], t("lib.cmake.j2"), lib_spec),
                (files(lib["model"], d)["mk"], t("lib.mk.j2"), lib_spec)]
    return out


# what only the header says (a target's notes, declarations, context fields, memory macros): the other files
# do not depend on them, so that e.g. gap9's memory sizes regenerate the header alone
HEADER_ONLY = ("notes", "declarations", "includes", "memory", "context")


def core(lib: dict) -> dict:
    """lib without HEADER_ONLY: the spec of the files that are not the header (e.g. a harness)."""
    return {k: v for k, v in lib.items() if k not in HEADER_ONLY}


def weights_files(lib: dict, templates_dir: str, layers, align: int = 16) -> list:
    """Per layer with parameters, the assembly file that links its weights .bin into the
    library (symbol <prefix>_params_<cname>, `align`-byte aligned); the .bin is found on the
    assembler's include path (-Wa,-I<build>/bin/weights)."""
    rel = os.path.relpath(TEMPLATES, templates_dir)
    template = "weights.S.j2" if rel == "." else os.path.join(rel, "weights.S.j2")
    return [(f"src/weights/{lp.cname}.S", template,
             {"cname": lp.cname, "symbol": f"{lib['prefix']}_params_{lp.cname}", "align": align,
              "file": os.path.basename(binfiles.bin_name("weights", lp.cname))})
            for lp in layers if lp.param_layout]


def weights_include(build_dir: str) -> str:
    """The assembler flag that lets the weights .S files find their .bin."""
    return "-Wa,-I" + os.path.dirname(binfiles.bin_path(build_dir, "weights", "x"))


def harness_bins(style: str = "tree") -> dict:
    """The .bin names the harnesses read, as C format strings (binfiles' rule; style "flat"
    on a device's file system, gap9's readfs)."""
    return {"input": binfiles.INPUT, "golden": binfiles.bin_name("golden", "%s", style)}


def _io(graph, tensor_name: str, layout: str, model_shape=None) -> dict:
    """model_shape: the model's own shape when its layout is not the IR's (a TFLite model's
    NHWC (1, H, W, C) or NLC (1, L, C), an ONNX 1-D model's NCL (1, C, L)): run_float's
    arrays are in that layout."""
    from ..opkit.layout import model_layout_name
    t = graph.tensor(tensor_name)
    shape = [int(d) for d in t.shape]
    layout_name = "NCHW" if len(shape) == 4 else "NC"
    internal = layout_name
    if len(shape) == 4 and layout == "hwc":
        internal = "NHWC"
    model_layout = layout_name
    if model_shape is not None and len(shape) == 4:
        model_layout = model_layout_name(getattr(graph, "model_layout", None), len(model_shape), layout_name)
    model_shape = [int(d) for d in model_shape] if model_shape is not None else shape
    # the header's dimensions, in the order of their layout's letters
    dims = [shape[0], shape[2], shape[3], shape[1]] if internal == "NHWC" else shape
    model_dims = model_shape if len(model_shape) == len(model_layout) else shape
    return {"shape": shape, "size": int(np.prod(shape)), "scale": repr(float(np.float32(t.q.scale))),
            "zero_point": int(t.q.zero_point), "model_layout": model_layout, "layout": internal,
            "model_shape": model_shape, "dims": dims, "model_dims": model_dims}


def _packed(graph, names: list, layout: str, first_model_shape) -> list:
    """Each tensor's facts plus its model name, a C identifier (upper case, for macros) and
    its offset in the packed buffer: a model with several inputs (outputs) takes (gives)
    them back to back, in the model's order."""
    from ..names import c_names
    ids = c_names(names)
    out, offset = [], 0
    for k, name in enumerate(names):
        io = _io(graph, name, layout, first_model_shape if k == 0 else None)
        io.update(name=name, id=ids[name].upper(), offset=offset)
        offset += io["size"]
        out.append(io)
    return out


def spec(graph, layout: str, model_cname: str) -> dict:
    """The library-level facts (header, float wrappers): nothing per layer."""
    from .. import numerics
    lay = getattr(graph, "model_layout", None) or {}
    inputs = _packed(graph, graph.inputs, layout, lay.get("input"))
    outputs = _packed(graph, graph.outputs, layout, lay.get("output"))
    return {"model": model_cname, "prefix": f"nns_{model_cname}", "macro": f"NNS_{model_cname.upper()}",
            "name": graph.name, "numerics": numerics.graph_rule(graph),
            "input": inputs[0], "output": outputs[0], "inputs": inputs, "outputs": outputs,
            "input_size": sum(t["size"] for t in inputs), "output_size": sum(t["size"] for t in outputs)}
