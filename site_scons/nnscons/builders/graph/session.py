"""Everything planned for one `scons target=T model=M` call, shared by the node actions.

Planning runs while the SConstruct is read; actions run later (possibly in threads with
-j N) and read the same in-memory graph, so weights and goldens never re-import the model.
"""
from __future__ import annotations

import difflib
import os
import threading

import numpy as np

from ... import names
from ...errors import UserError
from ...planning import keys
from ...planning.model_cache import load_graph
from ...targets import kind_module, schema, schemas
from .paths import model_cache_file, model_dir


def warm_up(kind: str) -> None:
    """What the planning needs after a model's import, done while the zoo generator or
    onnxruntime's calibration runs on another thread (both release the GIL): the target
    kind's package imported (its modules compiled, cold) and its templates compiled by
    Jinja.  Only a head start: whatever fails here fails again, and is reported, where it
    is needed."""
    try:
        module = kind_module(kind)
        templates = getattr(module, "TEMPLATES", None)
        if templates:
            from ... import codegen
            codegen.precompile(templates)
    except Exception:         # noqa: BLE001 - reported by the planning's own import or render
        pass


class Session:
    def __init__(self, root: str, manifest, target_cfg, model_cfg, input_path: str | None,
                 platform: str | None = None, build_dir: str | None = None):
        self.root = root
        self.manifest = manifest
        self.target_cfg = target_cfg
        self.model_cfg = model_cfg
        self._check_platform(platform)
        self.build_dir = build_dir or model_dir(target_cfg, model_cfg)
        os.makedirs(self.build_dir, exist_ok=True)
        # the kind is imported while the zoo generator or onnxruntime runs (warm_up)
        self.graph = load_graph(model_cfg, root, self.build_dir,
                                model_cache_file(self.build_dir),
                                meanwhile=lambda: warm_up(target_cfg.kind))
        self.kind = kind_module(target_cfg.kind)
        self.options = self.kind.options(target_cfg)
        self._set_platform(platform)
        # where the build goes, for files that name paths relative to themselves (a library's
        # .mk/.cmake): relative, so that no signature depends on the checkout's absolute path
        self.options["build"] = {"dir": self.build_dir}
        self.cnames = names.c_names([layer.name for layer in self.graph.layers])
        overrides = model_cfg.layer_overrides.get(target_cfg.name, {})
        self._check_override_names(overrides)
        self.plan = self.kind.plan(self.graph, self.cnames, self.options, overrides, self._where)
        self.plan_by_cname = {lp.cname: lp for lp in self.plan.layers}
        self._input_codes = None          # the run's int8 input when given as codes
        self.input_float, input_desc = self._load_input(input_path)
        # the quantized input also depends on the input's quantization (a new calibration
        # with the same float input) and on the rule that rounds it
        xs = self.input_float if isinstance(self.input_float, dict) else {self.graph.input: self.input_float}
        self.input_key = keys.digest(input_desc, getattr(self.graph, "numerics", "onnx"),
                                     *[part for t in self.graph.inputs for part in
                                       (t, xs[t], float(self.graph.tensor(t).q.scale),
                                        int(self.graph.tensor(t).q.zero_point))])
        # hashing the weights is the costliest part of a no-op call: once per layer
        self.numeric_keys = {l.name: keys.layer_numeric_key(l, self.graph) for l in self.graph.layers}
        self.golden_keys = keys.golden_keys(self.graph, self.input_key, self.numeric_keys)
        self._lock = threading.Lock()
        self._reference = None
        self.report_written = False       # set by the REPORT action: the table is printed then
        self.verdict_printed = False      # set by the CHECK action
        self.step_times = []              # (verb, monotonic time) of each step this build ran

    def _check_platform(self, platform: str | None) -> None:
        """platform= must be one of the kind's (checked before the model's import)."""
        choices = schema(self.target_cfg.kind)["run"]["platform"]
        if platform is not None and platform not in choices:
            owners = [k for k, s in schemas().items() if platform in s.get("run", {}).get("platform", ())]
            raise UserError(f"platform={platform}: target '{self.target_cfg.name}' (kind "
                            f"{self.target_cfg.kind}) runs on: {', '.join(choices)}" +
                            (f"; {platform} is kind {' or '.join(owners)}'s platform: choose a target "
                             f"of that kind" if owners else ""))

    def _set_platform(self, platform: str | None) -> None:
        """platform= from the command line over run.platform; the kind may resolve 'auto'."""
        if platform is not None:
            self.options["run"]["platform"] = platform
        resolve = getattr(self.kind, "resolve_platform", None)
        if resolve is not None:
            self.options["run"]["platform"] = resolve(self.options, self.target_cfg.name,
                                                      explicit=platform is not None)

    # ---- locations for error messages

    def _where(self, layer, *keys) -> str:
        m, t = self.model_cfg.name, self.target_cfg.name
        if layer is not None:
            path = ("models", m, "targets", t, "layers", layer) + keys
        else:
            path = ("targets", t) + keys
        loc = self.manifest.where(*path)
        return f"{loc}: {'.'.join(path)}"

    def _check_override_names(self, overrides: dict) -> None:
        known = [layer.name for layer in self.graph.layers]
        for name in overrides:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=3)
                hint = f"; did you mean: {', '.join(close)}" if close else ""
                raise UserError(
                    f"{self._where(name)}: no layer named '{name}' in model "
                    f"'{self.model_cfg.name}'{hint}. Layer names are those of the report "
                    f"(build/.../report.json); the first ones are: {', '.join(known[:8])}")

    # ---- the run input

    def _load_input(self, input_path):
        """The run's float input in the IR's layout (given in the model's own layout).

        A model whose file takes int8 or uint8 (TFLite's full-integer models) also takes
        its codes as they are: they set the quantized input directly, and the float input
        is their exact dequantized value."""
        from ...opkit import layout
        from ...reference import dequantize
        if len(self.graph.inputs) > 1:
            return self._load_inputs(input_path)
        x, desc = self._read_input(input_path, layout.model_input_shape(self.graph))
        if x.dtype == np.float32:
            return layout.model_input(self.graph, x), desc
        codes = x.astype(np.int16) - (128 if x.dtype == np.uint8 else 0)
        self._input_codes = layout.model_input(self.graph, codes).astype(np.int8)
        return dequantize(self.graph.tensor(self.graph.input), self._input_codes), desc

    def _load_inputs(self, input_path):
        """A model with several inputs: {name: float array} from an .npz keyed by input name
        (in the IR's layout, which is the ONNX model's own), or seeded random arrays."""
        g = self.graph
        shapes = {t: tuple(g.tensor(t).shape) for t in g.inputs}
        source = input_path or self.model_cfg.input
        if source is None:
            rng = np.random.default_rng(self.model_cfg.seed or 0)
            return ({t: rng.standard_normal(shapes[t]).astype(np.float32) for t in g.inputs},
                    ["random", self.model_cfg.seed or 0])
        try:
            with np.load(source, allow_pickle=False) as data:
                if not isinstance(data, np.lib.npyio.NpzFile):
                    raise ValueError("a single array")
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError) as e:
            raise UserError(f"input {source}: the model '{self.model_cfg.name}' has {len(g.inputs)} "
                            f"inputs ({', '.join(g.inputs)}); give an .npz with one array per input "
                            f"name ({e})") from None
        if set(arrays) != set(g.inputs):
            raise UserError(f"input {source}: holds {sorted(arrays)}; the model "
                            f"'{self.model_cfg.name}' takes {', '.join(g.inputs)} (one array per input name)")
        xs = {}
        for t in g.inputs:
            x = arrays[t]
            if x.shape != shapes[t] and x.shape == shapes[t][1:]:
                x = x.reshape(shapes[t])
            if x.shape != shapes[t]:
                raise UserError(f"input {source}: array {t!r} has shape {tuple(x.shape)}; the model "
                                f"'{self.model_cfg.name}' input {t!r} has shape {shapes[t]}")
            if not np.issubdtype(x.dtype, np.floating) or not np.all(np.isfinite(x)):
                raise UserError(f"input {source}: array {t!r} must hold finite float32 values "
                                f"(got {x.dtype})")
            xs[t] = x.astype(np.float32)
        return xs, ["file"]

    def _one_array(self, source):
        """The array of a .npy file, or of an .npz holding one (or one named after the
        model's input)."""
        try:
            data = np.load(source, allow_pickle=False)
        except OSError as e:
            raise UserError(f"input {source}: cannot read it ({e.strerror or e})") from None
        except ValueError:
            raise UserError(f"input {source}: not a .npy (or .npz) array file; write the input with "
                            f"numpy.save (a float32 array in the model's input shape)") from None
        if not isinstance(data, np.lib.npyio.NpzFile):
            return data
        with data:
            name = self.graph.inputs[0]
            if name in data.files or len(data.files) == 1:
                return data[name if name in data.files else data.files[0]]
            raise UserError(f"input {source}: an .npz holding {sorted(data.files)}; the model "
                            f"'{self.model_cfg.name}' takes one input, {name!r}: give it one array, or "
                            f"one named {name!r}")

    def _read_input(self, input_path, shape):
        source = input_path or self.model_cfg.input or getattr(self.graph, "default_input", None)
        if source is None:
            seed = self.model_cfg.seed or 0
            x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
            return x, ["random", seed]
        x = self._one_array(source)
        if x.shape != shape and x.size == int(np.prod(shape)) and x.shape == shape[1:]:
            x = x.reshape(shape)
        if x.shape != shape:
            raise UserError(f"input {source}: shape {tuple(x.shape)} does not match the model "
                            f"'{self.model_cfg.name}' input shape {shape} (layout as in the model)")
        code_type = (getattr(self.graph, "model_dtype", None) or {}).get("input")
        if code_type in ("int8", "uint8") and x.dtype == np.dtype(code_type):
            return x, ["codes", code_type]
        if not np.issubdtype(x.dtype, np.floating):
            codes = (f", or {code_type} codes as the model's input takes them"
                     if code_type in ("int8", "uint8") else "")
            raise UserError(f"input {source}: got dtype {x.dtype}; expected float32 values{codes}")
        if not np.all(np.isfinite(x)):
            bad = int(np.size(x) - np.count_nonzero(np.isfinite(x)))
            raise UserError(f"input {source}: {bad} value(s) are NaN or infinite; expected "
                            f"finite float32 values")
        return x.astype(np.float32), ["file"]

    # ---- the integer reference, computed once per scons process

    def reference(self) -> dict:
        from ... import reference
        with self._lock:
            if self._reference is None:
                run = self.plan.reference or reference.run_graph
                self._reference = run(self.graph, self.quantized_input())
            return self._reference

    def quantized_input(self):
        """The input's codes (IR layout); {input name: codes} for a model with several."""
        from ... import reference
        if self._input_codes is not None:
            return self._input_codes
        return reference.quantize_input(self.graph, self.input_float)
