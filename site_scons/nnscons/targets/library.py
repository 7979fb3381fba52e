"""The network as a library a firmware links: names, the header's facts, the files.

Every target's build produces lib/libnns_<model>.a, include/nns_<model>.h and, beside the
library, nns_<model>.cmake (an imported target nns::<model>) and nns_<model>.mk (Make
variables).  The project's own test program is a harness linked against that library.
Here: what the generated C needs to know about the network (names as C identifiers, sizes,
shapes, quantization, layout), and the file names; targets/<kind>/ declares the nodes.
"""
from __future__ import annotations

import numpy as np

from .. import names


def c_model_name(model_name: str) -> str:
    """The model name as the C identifier used in nns_<model>_run and NNS_<MODEL>_..."""
    cname = names.c_names([model_name])[model_name]
    return cname.lower() if cname.isidentifier() else "model"


def files(model_cname: str) -> dict:
    """Paths (under the build folder) of the library's files."""
    return {"lib": f"lib/libnns_{model_cname}.a", "header": f"include/nns_{model_cname}.h",
            "cmake": f"lib/nns_{model_cname}.cmake", "mk": f"lib/nns_{model_cname}.mk",
            "source": f"src/nns_{model_cname}.c"}


def _io(graph, tensor_name: str, layout: str) -> dict:
    t = graph.tensor(tensor_name)
    shape = [int(d) for d in t.shape]
    layout_name = "NCHW" if len(shape) == 4 else "NC"
    internal = layout_name
    if len(shape) == 4 and layout == "hwc":
        internal = "NHWC"
    return {"shape": shape, "size": int(np.prod(shape)), "scale": repr(float(np.float32(t.q.scale))),
            "zero_point": int(t.q.zero_point), "model_layout": layout_name, "layout": internal}


def spec(graph, layout: str, model_cname: str) -> dict:
    """The library-level facts (header, float wrappers): nothing per layer."""
    return {"model": model_cname, "prefix": f"nns_{model_cname}", "macro": f"NNS_{model_cname.upper()}",
            "name": graph.name, "input": _io(graph, graph.input, layout),
            "output": _io(graph, graph.output, layout)}
