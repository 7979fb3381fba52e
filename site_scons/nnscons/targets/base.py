"""What every target plan is made of, and the pieces targets share.

The registry style follows an export library: per op, an OpImpl names the template that
emits the layer's code, the kernel sources it needs, and a constraint check.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import shutil
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .. import binfiles, ops
from ..errors import UserError
# layout conversion lives in the ground floor (tensor_layout); the targets read it from here too
from .. import tensor_layout
from ..tensor_layout import from_layout, to_layout  # noqa: F401


_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_C_NAME = re.compile(r"\b(nn_\w+)\s*\(")


def _c_symbols(path: str) -> tuple:
    """(nn_ functions a C file defines with external linkage, nn_ functions it calls);
    read once per process and file version (a no-op build plans every model)."""
    st = os.stat(path)
    return _c_symbols_of(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=None)
def _c_symbols_of(path: str, mtime_ns: int, size: int) -> tuple:
    with open(path, encoding="utf-8") as f:
        text = _C_COMMENT.sub(" ", f.read())
    defined, called = set(), set()
    for m in _C_NAME.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        head = text[line_start:m.start()]
        depth, i = 0, m.end() - 1          # the parameter list's end, then '{' or ';'
        while i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        nxt = text[i:].lstrip()[:1]
        at_top = head[:1].isalpha() and not head.startswith(("static", "return", "if", "else"))
        if at_top and nxt == "{":
            defined.add(m.group(1))
        else:
            called.add(m.group(1))
    return frozenset(defined), frozenset(called - defined)


def template_calls(templates_dir: str, template: str) -> set:
    """nn_ functions a layer template and the templates it pulls in may call."""
    st = os.stat(os.path.join(templates_dir, template))
    return set(_template_calls(templates_dir, template, st.st_mtime_ns))


@functools.lru_cache(maxsize=None)
def _template_calls(templates_dir: str, template: str, _mtime_ns: int) -> frozenset:
    from .. import codegen
    top = os.path.join(templates_dir, template)
    here = os.path.dirname(top)                # where the renderer looks first (actions.render_source)
    calls, seen, todo = set(), set(), [top]
    while todo:
        path = todo.pop()
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        calls |= set(_C_NAME.findall(text))
        todo += [codegen.template_file(here, name) for name in codegen.template_references(text)]
    return frozenset(calls)


def with_kernel_dependencies(kernels, calls=(), folders=()) -> list:
    """The kernel sources plus, transitively, each one in the same folders (and `folders`,
    kernels/common) that alone defines an nn_ function they or the generated code
    (`calls`: template_calls) call, so no op table has to list what its kernels call in
    turn (a requant layer's nn_requant_s8 in nn_eltwise.c). A function defined in several
    files (target variants) is not chosen."""
    from ..resources import DATA_ROOT, data_path

    def usual(path):    # data_path's form: one file is never named two ways
        path = os.path.abspath(path)
        rel = os.path.relpath(path, DATA_ROOT)
        return path if rel.startswith("..") else data_path(rel)
    # (an op table imported under another working directory, as SConscript's chdir does,
    # names its kernels absolute where data_path now gives them relative)
    chosen = {usual(k): k for k in kernels}
    folders = ({os.path.dirname(k) for k in chosen} | {usual(f) for f in folders}
               | {data_path("kernels", "common")})
    index, symbols = {}, {}
    for folder in sorted(folders):
        for path in sorted(glob.glob(os.path.join(folder, "*.c"))):
            symbols[path] = _c_symbols(path)
            for name in symbols[path][0]:
                index.setdefault(name, []).append(path)
    todo = [set(calls)] + [symbols[p][1] for p in sorted(chosen) if p in symbols]
    while todo:
        for name in sorted(todo.pop()):
            where = index.get(name, [])
            if len(where) == 1 and where[0] not in chosen:
                chosen[where[0]] = where[0]
                todo.append(symbols[where[0]][1])
    return sorted(chosen.values())


@dataclass(frozen=True)
class OpImpl:
    template: str                       # file under templates/<target>/
    kernels: tuple                      # kernel sources under kernels/
    check: Optional[Callable] = None    # (layer, graph) -> reason string if unsupported
    spec: Optional[Callable] = None     # (layer, graph) -> extra entries of the layer's spec
    residual: bool = False              # a two-input add the target fuses into the conv before it


@dataclass
class LayerPlan:
    layer: object                       # ir.Layer
    cname: str                          # sanitized identifier, also the file stem
    template: str
    kernels: tuple
    spec: dict                          # everything that changes this layer's code
    param_layout: list                  # [(section, dtype, count, offset)] of the weights .bin
    macs: int
    param_bytes: int
    # generated files of this layer: [(path under the build dir, template, spec)];
    # empty means the one C source src/layers/<cname>.c from (template, spec)
    files: list = field(default_factory=list)
    report: dict = field(default_factory=dict)   # target-specific report.json fields
    # the weights .bin's bytes in the target's layout (default: pack_params)
    pack: Optional[Callable] = None     # (layer, graph, param_layout) -> bytes
    # what else the packed bytes depend on (e.g. a generated kernel's panel width)
    pack_key: object = None

    def sources(self) -> list:
        return self.files or [(f"src/layers/{self.cname}.c", self.template, self.spec)]

    def packed_params(self, graph) -> bytes:
        return (self.pack or pack_params)(self.layer, graph, self.param_layout)


@dataclass
class TargetPlan:
    layers: list                        # LayerPlan in execution order
    network: dict                       # buffer plan (at least "arena_size"), layer order: the network source's spec
    kernels: list                       # kernel sources to compile, sorted
    templates_dir: str                  # templates/<target>
    # per-network generated files [(path under the build dir, template, spec)]
    network_files: list = field(default_factory=list)
    layout: str = "chw"                 # activation layout of input/golden/output .bin files
    # 2-D tensors that hold a flattened 4-D tensor's bytes in `layout`: {tensor: (1,C,H,W)}
    tensor_layouts: dict = field(default_factory=dict)
    bin_names: str = "tree"             # "tree": bin/weights/L.bin; "flat": bin/L_weights.bin
    report: dict = field(default_factory=dict)   # network-level report.json fields
    columns: list = field(default_factory=list)  # extra table columns: [(header, layer report key)]
    extra: dict = field(default_factory=dict)
    # A target whose hardware fixes its own arithmetic (k210) brings its reference:
    # reference(graph, int8 input) -> {tensor: int8 array}, default nnscons.reference.run_graph;
    # golden_tags {tensor: json-able} go into that tensor's golden key (e.g. where each
    # upstream layer runs); extra["golden_py"] lists the Python files the reference is made of.
    reference: Optional[Callable] = None
    golden_tags: dict = field(default_factory=dict)

    def bin_path(self, kind: str, cname: str) -> str:
        """Path under bin/ of a layer's 'weights' or 'golden' file (binfiles.bin_name)."""
        return binfiles.bin_name(kind, cname, self.bin_names)


def tools_exist(check_tools, env) -> bool:
    """A kind Tool's exists(): its check_tools(env, session) passes (env['NNS_SESSION'])."""
    session = env.get("NNS_SESSION")
    if session is None:
        return False
    try:
        check_tools(env, session)
    except UserError:
        return False
    return True


def merged_options(defaults: dict, target_cfg) -> dict:
    """A target's manifest sections over its kind's DEFAULTS, section by section."""
    merged = {}
    for section, values in defaults.items():
        merged[section] = dict(values)
        merged[section].update(target_cfg.sections.get(section, {}))
    return merged


def layer_fields(layer, graph, cname: str, layout, dims) -> dict:
    """The spec fields every layer template reads: the op and names, each input's and the
    output's dims (dims(shape): its h/w/c in the target's order), zero point and element count,
    the activation bounds and the .bin sections (layout: [(section, dtype, count, offset)])."""
    def tensor(t):
        return dict(dims(t.shape), zp=t.q.zero_point, size=int(np.prod(t.shape)))
    return {"op": layer.op, "name": layer.name, "cname": cname,
            "inputs": [tensor(graph.tensor(t)) for t in layer.inputs],
            "out": tensor(graph.tensor(layer.output)),
            "act": [layer.act_min, layer.act_max],
            "params": {section: {"dtype": dtype, "count": count, "offset": offset}
                       for section, dtype, count, offset in layout}}


def window_fields(layer) -> dict:
    """A windowed layer's (ops.has_window) spec fields: kernel, stride, dilation, pads (top,
    left, bottom, right), groups and count_include_pad, as lists and ints."""
    a = layer.attrs
    return {"kernel": list(a["kernel"]), "stride": list(a["stride"]), "dilation": list(a.get("dilation", (1, 1))),
            "pads": list(a["pads"]), "groups": a.get("groups", 1), "count_include_pad": a.get("count_include_pad", 0)}


def layer_key_at(layer_name: str, overrides: dict, where, section: str):
    """where(*keys) of a per-layer key's setting: 'targets.yaml:N: ...' of the layer's own
    value (the model's overrides of that layer) when it has one, else of the target's
    option targets.<t>.<section>.<keys>."""
    own = overrides.get(layer_name, {})
    return lambda *keys: where(layer_name, *keys) if keys[-1] in own else where(None, section, *keys)


def layer_key(layer_name: str, key: str, opts: dict, overrides: dict, where, section: str,
              limit=None, limit_text: str = "") -> tuple:
    """(value, where it was set) of a per-layer key: the layer's own value, else the target's
    opts[section][key].  With `limit` (a size key), a value above it is a UserError naming
    where it was set: '<where>: <key> <value> B exceeds <limit_text>'."""
    own = overrides.get(layer_name, {})
    value = own[key] if key in own else opts[section][key]
    at = layer_key_at(layer_name, overrides, where, section)(key)
    if limit is not None and value > limit:
        raise UserError(f"{at}: {key} {value} B exceeds {limit_text}")
    return value, at


def pool_check(layer, graph):
    """What no kernel of the op implements (the op's OpDef.check; usable as OpImpl.check)."""
    return ops.check(layer, graph)


# ---- parameters (.bin) layout: weight int8, bias/mult/shift int32, each 4-byte aligned

_DTYPES = {"weight": "int8", "bias": "int32", "mult": "int32", "shift": "int32", "index": "int32"}


def param_arrays(layer, graph) -> dict:
    arrays = {}
    if layer.weight is not None:
        arrays["weight"] = layer.weight
    if layer.bias is not None:
        arrays["bias"] = layer.bias
    arrays.update(ops.requant_params(layer, graph))
    return arrays


def param_layout(layer, graph, weight_row=None) -> list:
    """Section offsets from shapes only, so changing weight values never moves them.
    weight_row: bytes per output channel when a kernel wants its weight rows padded (zeros
    after the row's own values; pack_hwc fills them)."""
    layout, offset = [], 0
    counts = {"weight": None if layer.weight is None else
              int(layer.weight.size if weight_row is None else layer.weight.shape[0] * weight_row),
              "bias": None if layer.bias is None else int(layer.bias.size)}
    counts.update(_requant_counts(layer, graph))
    for section in ("weight", "bias", "mult", "shift", "index"):
        count = counts.get(section)
        if count is None:
            continue
        layout.append((section, _DTYPES[section], count, offset))
        offset += -(-count * np.dtype(_DTYPES[section]).itemsize // 4) * 4
    return layout


def _requant_counts(layer, graph) -> dict:
    return ops.requant_counts(layer, graph)


def pack_params(layer, graph, layout) -> bytes:
    arrays = param_arrays(layer, graph)
    blob = bytearray(layout_bytes(layout))
    for section, dtype, count, offset in layout:
        data = np.ascontiguousarray(arrays[section], dtype=np.dtype(dtype).newbyteorder("<")).reshape(-1)
        if data.size != count:
            raise AssertionError(f"{layer.name}: {section} has {data.size} values, layout says {count}")
        raw = data.tobytes()
        blob[offset:offset + len(raw)] = raw
    return bytes(blob)


def layout_bytes(layout) -> int:
    if not layout:
        return 0
    _, dtype, count, offset = layout[-1]
    return offset + -(-count * np.dtype(dtype).itemsize // 4) * 4


def macs(layer, graph) -> int:
    return ops.macs(layer, graph)


def unsupported(layer, target: str, ops: dict) -> UserError:
    return UserError(f"layer '{layer.name}' ({'+'.join(layer.source_ops) or layer.op}): op '{layer.op}' "
                     f"is not supported by target kind '{target}'; supported ops: {', '.join(sorted(ops))}")


def flattened_from(layer, graph):
    """The 4-D shape a Linear's input was flattened from (tensor_layout.flattened_from)."""
    return tensor_layout.flattened_from(layer, graph, ops.get)


def flattened_layouts(graph) -> dict:
    """{reshape output: the 4-D shape it flattens} (tensor_layout.flattened_layouts)."""
    return tensor_layout.flattened_layouts(graph, ops.get)


def pack_hwc(layer, graph, layout) -> bytes:
    """The weights .bin of a target whose activations are HWC (gap9, host): the sections
    the op's hwc_params hook reorders for HWC activations (conv weights OHWI, Linear columns
    in HWC order when it reads a flattened 4-D tensor, a move's gather index in HWC slots),
    a weight's rows zero-padded to the layout's count when it says so (param_layout)."""
    arrays = dict(param_arrays(layer, graph))
    hook = ops.get(layer.op).hwc_params
    if hook:
        arrays.update(hook(layer, graph, ops.get))
    count = next((c for name, _, c, _ in layout if name == "weight"), None)
    if count is not None and count != arrays["weight"].size:     # rows padded to count / out_c bytes
        rows = arrays["weight"].reshape(arrays["weight"].shape[0], -1)
        padded = np.zeros((rows.shape[0], count // rows.shape[0]), rows.dtype)
        padded[:, :rows.shape[1]] = rows
        arrays["weight"] = padded
    blob = bytearray(layout_bytes(layout))
    for section, dtype, count, offset in layout:
        raw = np.ascontiguousarray(arrays[section], dtype=np.dtype(dtype).newbyteorder("<")).reshape(-1).tobytes()
        blob[offset:offset + len(raw)] = raw
    return bytes(blob)


def cross_ar(cc: str) -> str:
    """The archiver beside a cross compiler (riscv64-unknown-elf-gcc -> riscv64-unknown-elf-ar)."""
    if cc.endswith("gcc"):
        ar = cc[:-3] + "ar"
        if shutil.which(ar):
            return ar
    return "ar"
