"""targets.yaml's validation: every key against the schema (manifest_schema) and the
target kinds' own schemas, each error a ManifestError naming file:line, the dotted key path,
what was wrong and the valid choices."""
from __future__ import annotations

import difflib
import json
import os

from .errors import ManifestError
from .manifest_schema import (CALIBRATION_KEYS, DEFAULTS_KEYS, FORMATS, LAYER_SECTION, MAX_INPUT_ELEMENTS,
                              MODEL_KEYS, MODEL_SUFFIXES, TARGET_KEYS, ModelConfig, TargetConfig, _NAME_RE)
from .manifest_yaml import _Map, _describe, _dotted
from .sizes import parse_size


class _Validator:
    def __init__(self, display: str, folder: str, kinds: dict, zoo: dict):
        self.display, self.folder, self.kinds, self.zoo = display, folder, kinds, zoo
        self.files = set()        # every path the manifest names (planning reads them)

    def error(self, line, path, problem, hint=None) -> ManifestError:
        where = f"{self.display}:{line}" if line else self.display
        text = f"{where}: {_dotted(path)}: {problem}" if path else f"{where}: {problem}"
        return ManifestError(text + (f"\n  hint: {hint}" if hint else ""))

    # generic checks

    def mapping(self, value, path, line) -> _Map:
        if value is None:  # `memory:` with nothing under it
            empty = _Map()
            empty.line = line
            return empty
        if not isinstance(value, _Map):
            raise self.error(line, path, f"expected a mapping, got {_describe(value)}")
        return value

    def keys(self, m: _Map, path, line, allowed, required=()):
        for key in m:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                raise self.error(m.key_lines[key], path + [key], "unknown key; expected one of: "
                                 + (", ".join(allowed) or "(none)"),
                                 f"did you mean '{close[0]}'?" if close else None)
        for key in required:
            if key not in m:
                raise self.error(line, path, f"missing required key '{key}'")

    def name(self, m: _Map, key, path):
        if not _NAME_RE.match(key):
            raise self.error(m.key_lines[key], path + [key],
                             "invalid name; use letters, digits, '_', '-' and '.', "
                             "starting with a letter or digit",
                             "the name becomes a directory under build/")

    def typed(self, value, typ, path, line):
        if isinstance(typ, (list, tuple)):
            # `type(...) is` so that `true` does not match a choice of 1.
            if any(value == c and type(value) is type(c) for c in typ):
                return value
            raise self.error(line, path, f"invalid value {_describe(value)}; expected one of: "
                             + ", ".join(str(c) for c in typ))
        if typ == "str" and isinstance(value, str):
            return value
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if typ == "int" and is_int:
            return value
        if typ == "count|auto" and value == "auto":
            return value
        if typ in ("count", "count|auto") and is_int:
            if value < 1:
                raise self.error(line, path, f"expected an integer >= 1, got {value}")
            return value
        if typ == "seed" and is_int:
            if not 0 <= value < 2**32:
                raise self.error(line, path, f"expected a seed from 0 to {2**32 - 1}, got {value}")
            return value
        if typ == "bool" and isinstance(value, bool):
            return value
        if typ == "size":
            try:
                return parse_size(value)
            except ValueError as e:
                raise self.error(line, path, str(e)) from None
        if typ == "list[str]" and isinstance(value, list):
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    raise self.error(value.item_lines[i], path + [i],
                                     f"expected a string, got {_describe(item)}")
            return list(value)
        if typ == "path" and isinstance(value, str):
            return self.resolve(value)
        expected = {"str": "a string", "int": "an integer", "count": "an integer >= 1",
                    "count|auto": "an integer >= 1 or auto",
                    "seed": f"an integer from 0 to {2**32 - 1}", "bool": "true or false",
                    "list[str]": "a list of strings", "path": "a path (string)"}
        if typ not in expected:
            raise ValueError(f"kind schema: unknown type {typ!r} for {_dotted(path)}")
        raise self.error(line, path, f"expected {expected[typ]}, got {_describe(value)}",
                         "quote it ('...') if you meant a string" if typ == "str" else None)

    def resolve(self, value: str) -> str:
        path = os.path.normpath(os.path.join(self.folder, os.path.expanduser(value)))
        self.files.add(path)
        return path

    def existing(self, value, path, line, what) -> str:
        """An existing path relative to the manifest's folder, returned absolute."""
        self.typed(value, "str", path, line)
        resolved = self.resolve(value)
        if not os.path.exists(resolved):
            raise self.error(line, path, f"{what} not found: {value} (relative to the folder "
                             f"of {self.display})")
        return resolved

    # sections

    def defaults(self, root, targets, models) -> dict:
        if "defaults" not in root:
            return {}
        path = ["defaults"]
        m = self.mapping(root["defaults"], path, root.key_lines["defaults"])
        self.keys(m, path, root.key_lines["defaults"], DEFAULTS_KEYS)
        result = {}
        for key, declared, section in (("target", targets, "targets"), ("model", models, "models")):
            if key in m:
                value = self.typed(m[key], "str", path + [key], m.value_lines[key])
                if value not in declared:
                    raise self.error(m.value_lines[key], path + [key],
                                     f"unknown {key} '{value}'; expected one of: "
                                     + (", ".join(declared) or "(none declared)"),
                                     f"declare it under '{section}:' or fix the name")
                result[key] = value
        if "cache" in m:    # a shared build cache folder (relative to the manifest), like cache=
            result["cache"] = self.typed(m["cache"], "path", path + ["cache"], m.value_lines["cache"])
        return result

    def targets(self, root) -> dict:
        line = root.key_lines.get("targets", root.line)
        m = self.mapping(root.get("targets"), ["targets"], line)
        if not m:
            raise self.error(line, ["targets"], "at least one target is required",
                             "e.g. targets: {host: {kind: host}}")
        return {name: self.target(name, m[name], ["targets", name], m) for name in m}

    def target(self, name, value, path, parent) -> TargetConfig:
        self.name(parent, name, path[:-1])
        line = parent.key_lines[name]
        m = self.mapping(value, path, line)
        if "kind" not in m:
            raise self.error(line, path, "missing required key 'kind'; expected one of: "
                             + ", ".join(self.kinds))
        kind = m["kind"]
        if not isinstance(kind, str) or kind not in self.kinds:
            what = f"unknown kind '{kind}'" if isinstance(kind, str) else \
                f"kind must be a string, got {_describe(kind)}"
            raise self.error(m.value_lines["kind"], path + ["kind"],
                             f"{what}; expected one of: " + ", ".join(self.kinds))
        schema = self.kinds[kind]
        self.platform_of_another_kind(m, kind, path)
        section_names = [s for s in schema if s != LAYER_SECTION]
        self.keys(m, path, line, list(TARGET_KEYS) + section_names)
        description = None
        if "description" in m:
            description = self.typed(m["description"], "str", path + ["description"],
                                     m.value_lines["description"])
        sections = {s: self.fields(m[s], schema[s], path + [s], m.key_lines[s])
                    for s in section_names if s in m}
        return TargetConfig(name, kind, description, sections)

    def platform_of_another_kind(self, m: _Map, kind, path) -> None:
        """run.platform naming a platform of another kind (e.g. gvsoc-open, once a gap9 platform,
        now kind pulp-open's): the usual invalid-choice line, saying which kind has it, as a
        platform that moved to a kind of its own is a one-word edit of the manifest."""
        run = m.get("run")
        platform = run.get("platform") if isinstance(run, _Map) else None
        own = self.kinds[kind].get("run", {}).get("platform", ())
        if not isinstance(platform, str) or not own or platform in own:
            return
        owners = [k for k, schema in self.kinds.items() if platform in schema.get("run", {}).get("platform", ())]
        if owners:
            raise self.error(run.value_lines["platform"], path + ["run", "platform"],
                             f"invalid value {_describe(platform)}; expected one of: {', '.join(own)}; "
                             f"{platform} is kind {' or '.join(owners)}'s platform: write "
                             f"`kind: {owners[0]}` for target '{path[-1]}'")

    def fields(self, value, schema: dict, path, line) -> dict:
        m = self.mapping(value, path, line)
        self.keys(m, path, line, list(schema))
        return {k: self.typed(m[k], schema[k], path + [k], m.value_lines[k]) for k in m}

    def models(self, root, targets) -> dict:
        if "models" not in root:
            return {}
        m = self.mapping(root["models"], ["models"], root.key_lines["models"])
        return {name: self.model(name, m, targets) for name in m}

    def model(self, name, parent, targets) -> ModelConfig:
        path = ["models", name]
        self.name(parent, name, path[:-1])
        line = parent.key_lines[name]
        m = self.mapping(parent[name], path, line)
        self.keys(m, path, line, MODEL_KEYS)
        # Scalars are reported at their value's line, sub-mappings at their key's line.
        val = lambda key: (m[key], path + [key], m.value_lines[key])  # noqa: E731
        sub = lambda key: (m[key], path + [key], m.key_lines[key])  # noqa: E731
        scalar = lambda key, typ: self.typed(m[key], typ, path + [key], m.value_lines[key])  # noqa: E731
        if ("zoo" in m) == ("source" in m):
            raise self.error(line, path, "exactly one of 'zoo' or 'source' is required, got "
                             + ("both" if "zoo" in m else "neither"),
                             f"use 'zoo: <{' | '.join(self.zoo)}>' for a generated model, or "
                             "'source: <file.onnx, file.tflite or ARES directory>' relative to the manifest")
        zoo = scalar("zoo", "str") if "zoo" in m else None
        if zoo is not None and zoo not in self.zoo:
            raise self.error(m.value_lines["zoo"], path + ["zoo"],
                             f"unknown zoo model '{zoo}'; expected one of: {', '.join(self.zoo)}")
        misplaced, why = (("format", "applies only to 'source' models; zoo models are ONNX") if zoo else
                          ("seed", "applies only to 'zoo' models (it seeds the generated weights)"))
        if misplaced in m:
            raise self.error(m.key_lines[misplaced], path + [misplaced], why)
        source = None if zoo else self.existing(*val("source"), "model source")
        fmt = scalar("format", FORMATS) if "format" in m else "auto"
        if source:
            self.check_format(source, fmt, path + ["source"], m.value_lines["source"])
        seed = scalar("seed", "seed") if "seed" in m else 0
        input_shape = self.input_shape(*val("input_shape"), zoo) if "input_shape" in m else None
        npy = self.existing(*val("input"), "input file") if "input" in m else None
        calibration = self.quantization(*sub("quantization")) if "quantization" in m else {}
        overrides = self.overrides(*sub("targets"), targets) if "targets" in m else {}
        float_source = self.float_source(*val("float_source"), zoo) if "float_source" in m else None
        return ModelConfig(name, zoo, source, fmt, seed, input_shape, npy, calibration, overrides,
                           float_source=float_source)

    def float_source(self, value, path, line, zoo):
        if zoo:
            raise self.error(line, path, "applies only to 'source' models that are already quantized; "
                             "a zoo model is float and its fidelity is measured on every build")
        resolved = self.existing(value, path, line, "float model")
        if not resolved.lower().endswith(".onnx") or os.path.isdir(resolved):
            raise self.error(line, path, f"expected the float .onnx model the quantized one was made "
                             f"from, got {value}")
        return resolved

    def check_format(self, source, fmt, path, line):
        is_dir = os.path.isdir(source)
        if fmt in ("onnx", "tflite") and is_dir:
            raise self.error(line, path, f"format {fmt} expects a .{fmt} file, got a directory")
        if fmt == "ares" and not is_dir:
            raise self.error(line, path, "format ares expects an ARES export directory, "
                             "got a file")
        if fmt in ("ares", "auto") and is_dir and not os.path.isfile(os.path.join(source, "network_info.json")):
            what = "an empty folder" if not os.listdir(source) else "a folder without network_info.json"
            raise self.error(line, path, f"{source} is {what}, not an ARES export (network_info.json, "
                             f"the layers' folders, test_cases/)",
                             "point source: at a .onnx or .tflite model file, or at the folder an "
                             "ARES export wrote")
        if fmt == "auto" and not is_dir and not source.lower().endswith(MODEL_SUFFIXES):
            raise self.error(line, path, "cannot tell the model format; expected a .onnx "
                             "file, a .tflite file or an ARES export directory",
                             "set 'format: onnx', 'format: tflite' or 'format: ares'")

    def input_shape(self, value, path, line, zoo):
        ok = (isinstance(value, list) and len(value) in (2, 3, 4)
              and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value))
        if not ok:
            raise self.error(line, path, f"expected [1, C, H, W], [1, C, L] or [1, F] with positive "
                             f"integers, got {json.dumps(value) if isinstance(value, list) else _describe(value)}")
        if value[0] != 1:
            raise self.error(line, path, f"batch size must be 1, got {value[0]}")
        elements = 1
        for v in value:
            elements *= v
        if elements > MAX_INPUT_ELEMENTS:
            raise self.error(line, path, f"{json.dumps(value)} is {elements:,} values per input; at most "
                             f"{MAX_INPUT_ELEMENTS:,} are supported (the calibration and reference runs hold "
                             f"several float copies in memory); give a smaller input_shape")
        if zoo:
            try:
                self.zoo[zoo].check_input_shape(tuple(value))
            except ValueError as e:
                raise self.error(line, path, f"zoo model '{zoo}': {e}") from None
        return tuple(value)

    def quantization(self, value, path, line) -> dict:
        m = self.mapping(value, path, line)
        self.keys(m, path, line, ("calibration",))
        if "calibration" not in m:
            return {}
        path, line = path + ["calibration"], m.key_lines["calibration"]
        c = self.mapping(m["calibration"], path, line)
        self.keys(c, path, line, CALIBRATION_KEYS)
        result = {}
        if "files" in c:
            files = self.typed(c["files"], "list[str]", path + ["files"], c.value_lines["files"])
            result["files"] = [self.existing(f, path + ["files", i], c["files"].item_lines[i],
                                             "calibration file") for i, f in enumerate(files)]
        if "count" in c:
            result["count"] = self.typed(c["count"], "count", path + ["count"], c.value_lines["count"])
        if "seed" in c:
            result["seed"] = self.typed(c["seed"], "seed", path + ["seed"], c.value_lines["seed"])
        return result

    def overrides(self, value, path, line, targets) -> dict:
        m = self.mapping(value, path, line)
        result = {}
        for tname in m:
            tpath, tline = path + [tname], m.key_lines[tname]
            if tname not in targets:
                raise self.error(tline, tpath, f"unknown target '{tname}'; expected one of: "
                                 + ", ".join(targets), "declare it under the top-level 'targets:'")
            t = self.mapping(m[tname], tpath, tline)
            self.keys(t, tpath, tline, ("layers",))
            layer_schema = self.kinds[targets[tname].kind].get(LAYER_SECTION, {})
            lpath = tpath + ["layers"]
            layers = self.mapping(t.get("layers"), lpath, t.key_lines.get("layers", tline))
            result[tname] = {layer: self.fields(layers[layer], layer_schema, lpath + [layer],
                                                layers.key_lines[layer]) for layer in layers}
        return result
