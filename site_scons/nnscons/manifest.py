"""targets.yaml: load, validate, and select a (target, model) pair.

Every error is a ManifestError of the form
    targets.yaml:14: models.resnet18.targets.host.layers.conv1.l1_budgt: unknown key; expected one of: l1_budget
i.e. file, line, dotted key path, what was wrong, the valid choices and, where it
helps, a hint. Target kinds are plug-ins: their schemas are passed in as `kinds`
({kind: {section: {key: type}}}, the "layer" section being the per-layer override
keys), so this module knows nothing about specific targets. A type is "str", "int",
"bool", "size" (stored as int bytes), "list[str]", "path" (stored absolute, relative
to the manifest's folder) or a list of allowed values. Nothing is defaulted here
beyond what the schema below states; targets fill in their own defaults.
"""
from __future__ import annotations

import difflib
import json
import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Optional

import yaml

from .errors import ManifestError
from .sizes import parse_size

TOP_KEYS = ("defaults", "targets", "models")
DEFAULTS_KEYS = ("target", "model", "cache")
TARGET_KEYS = ("kind", "description")
# values per model input (a (1, 3, 4096, 4096) image is 50 M): beyond this the float copies
# of calibration and the reference exhaust a workstation's memory
MAX_INPUT_ELEMENTS = 1 << 28

MODEL_KEYS = ("zoo", "source", "format", "seed", "input_shape", "input", "quantization", "targets",
              "float_source")
FORMATS = ("auto", "onnx", "tflite", "ares")
MODEL_SUFFIXES = (".onnx", ".tflite")
CALIBRATION_KEYS = ("files", "count", "seed")
LAYER_SECTION = "layer"
# Target and model names become directories under build/.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class TargetConfig:
    name: str
    kind: str
    description: Optional[str]
    sections: dict  # section -> {key: value}, only what the manifest set


@dataclass(frozen=True)
class ModelConfig:
    name: str
    zoo: Optional[str]
    source: Optional[str]          # absolute path
    fmt: str                       # "auto" | "onnx" | "ares"
    seed: int = 0
    input_shape: Optional[tuple] = None
    input: Optional[str] = None    # absolute path of a .npy
    calibration: dict = field(default_factory=dict)      # files (absolute), count, seed
    layer_overrides: dict = field(default_factory=dict)  # target -> layer -> {key: value}
    folder: Optional[str] = None   # build folder name when it is not `name` (ad-hoc models)
    float_source: Optional[str] = None  # absolute path of the float .onnx a quantized model came from


# --- YAML loading with positions -------------------------------------------------

class _Map(dict):
    """A mapping that remembers the 1-based lines of its keys and values."""
    line = 0

    def __init__(self):
        super().__init__()
        self.key_lines = {}
        self.value_lines = {}


class _Seq(list):
    def __init__(self):
        super().__init__()
        self.item_lines = []


class _DuplicateKey(Exception):
    def __init__(self, path, line, first_line):
        super().__init__(path)
        self.path, self.line, self.first_line = path, line, first_line


class _Loader(yaml.SafeLoader):
    """SafeLoader building _Map/_Seq, keeping keys as written and refusing duplicates
    (PyYAML would silently keep the last one). Keys stay strings even when they look
    like numbers or booleans: `123:` is the layer named "123", `yes:` a model "yes"."""

    def __init__(self, stream):
        super().__init__(stream)
        self.path = []  # key path of the node being constructed, for duplicate errors

    def construct_map(self, node):
        seen = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key, line = self._key(key_node), key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(self.path + [key], line, seen[key])
            seen[key] = line
        self.flatten_mapping(node)  # `<<: *anchor` merges; explicit keys override
        result = _Map()
        result.line = node.start_mark.line + 1
        for key_node, value_node in node.value:
            key = self._key(key_node)
            self.path.append(key)
            result[key] = self.construct_object(value_node, deep=True)
            self.path.pop()
            result.key_lines[key] = key_node.start_mark.line + 1
            result.value_lines[key] = value_node.start_mark.line + 1
        return result

    def construct_seq(self, node):
        result = _Seq()
        for i, item in enumerate(node.value):
            self.path.append(i)
            result.append(self.construct_object(item, deep=True))
            self.path.pop()
            result.item_lines.append(item.start_mark.line + 1)
        return result

    def _key(self, node):
        if not isinstance(node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(
                None, None, "mapping keys must be plain names, not lists or mappings",
                node.start_mark)
        return node.value


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _Loader.construct_seq)


def _dotted(path) -> str:
    """models.resnet18.layers."layer1.0.conv1".l1_budget -- quote keys that hold dots."""
    parts = []
    for p in path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            text = p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else json.dumps(p)
            parts.append(("." if parts else "") + text)
    return "".join(parts)


def _describe(value) -> str:
    if value is None:
        return "nothing (empty value)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


# --- validation --------------------------------------------------------------------

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
        section_names = [s for s in schema if s != LAYER_SECTION]
        self.keys(m, path, line, list(TARGET_KEYS) + section_names)
        description = None
        if "description" in m:
            description = self.typed(m["description"], "str", path + ["description"],
                                     m.value_lines["description"])
        sections = {s: self.fields(m[s], schema[s], path + [s], m.key_lines[s])
                    for s in section_names if s in m}
        return TargetConfig(name, kind, description, sections)

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


# --- public API ----------------------------------------------------------------------

class Manifest:
    def __init__(self, path, display, root, targets, models, defaults):
        self.path = path          # as given to load_manifest
        self.display = display    # how errors name the file
        self.targets = targets
        self.models = models
        self.defaults = defaults  # {"target": ..., "model": ...}, only what was set
        self._root = root

    def where(self, *keypath) -> str:
        """'targets.yaml:14' for a key path, or the closest enclosing key that exists."""
        node, line = self._root, None
        for key in keypath:
            if isinstance(node, _Map) and key in node:
                line, node = node.key_lines[key], node[key]
            elif isinstance(node, _Seq) and isinstance(key, int) and 0 <= key < len(node):
                line, node = node.item_lines[key], node[key]
            else:
                break
        return f"{self.display}:{line}" if line else self.display

    def select(self, target_arg: Optional[str] = None, model_arg: Optional[str] = None):
        """(TargetConfig, ModelConfig) for the command line, falling back on defaults.

        A model argument that names no declared model but ends in .onnx or .tflite or is
        an existing path is an ad-hoc model with default settings.
        """
        target = self._pick("target", target_arg, self.targets)
        if model_arg and model_arg not in self.models and (
                model_arg.lower().endswith(MODEL_SUFFIXES) or os.path.exists(model_arg)):
            return target, self._adhoc(model_arg)
        return target, self._pick("model", model_arg, self.models)

    def _pick(self, what, arg, declared):
        name = arg or self.defaults.get(what)
        if not name and len(declared) == 1:         # the only one declared needs no default
            name = next(iter(declared))
        known = ", ".join(declared) or "(none declared)"
        if not name:
            raise ManifestError(f"{self.display}: no {what} selected; pass {what}=<name> on the "
                                f"command line or set defaults.{what} (known: {known})")
        if name not in declared:
            extra = " or a path to a .onnx / .tflite file / ARES directory" if what == "model" else ""
            raise ManifestError(f"{self.display}: {what}={name}: unknown {what}; expected one of: "
                                f"{known}{extra}")
        return declared[name]

    def _adhoc(self, arg) -> ModelConfig:
        source = os.path.abspath(arg)
        if not os.path.exists(source):
            raise ManifestError(f"model={arg}: file not found: {arg} (relative to {os.getcwd()})")
        stem = os.path.basename(os.path.normpath(source))
        for suffix in MODEL_SUFFIXES:
            if stem.lower().endswith(suffix):
                stem = stem[:-len(suffix)]
        if not stem.strip(". "):
            raise ManifestError(f"model={arg}: the file name gives the model no name; rename the "
                                f"file (e.g. net.onnx) or declare it under models: in {self.display}")
        # Its own build folder: an ad-hoc model never shares one with a manifest model or
        # with another file of the same name.
        where = os.path.relpath(source)
        digest = hashlib.sha256((source if where.startswith("..") else where).encode()).hexdigest()
        return ModelConfig(name=stem, zoo=None, source=source, fmt="auto",
                           folder=f"file-{stem}-{digest[:8]}")


def _display_name(path: str) -> str:
    """The path as given, made relative when it points inside the working directory."""
    if os.path.isabs(path):
        rel = os.path.relpath(path)
        if not rel.startswith(".."):
            return rel
    return path


def _zoo() -> dict:
    from .resources import zoo
    return zoo().ZOO


def load_manifest(path, kinds: dict) -> Manifest:
    """Load and validate `path`; every problem raises ManifestError with file:line."""
    path = os.fspath(path)
    display = _display_name(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ManifestError(f"{display}: cannot read the manifest: {e.strerror}") from None
    try:
        loader = _Loader(data)
    except yaml.reader.ReaderError as e:     # a character YAML does not allow (a NUL, ...)
        line = data[:max(e.position, 0)].count(b"\n") + 1
        raise ManifestError(f"{display}:{line}: invalid YAML: character #x{e.character:04x} is not allowed "
                            f"in a YAML file; is the file binary or mis-encoded? Save it as UTF-8 text") from None
    try:
        root = loader.get_single_data()
    except _DuplicateKey as e:
        raise ManifestError(f"{display}:{e.line}: {_dotted(e.path)}: duplicate key (first "
                            f"defined on line {e.first_line})\n  hint: YAML keeps only one; "
                            "merge the two entries") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{display}:{mark.line + 1}:{mark.column + 1}" if mark else display
        what = ": ".join(s for s in (e.context, e.problem) if s)
        raise ManifestError(f"{where}: invalid YAML: {what}") from None
    except yaml.YAMLError as e:
        raise ManifestError(f"{display}: invalid YAML: {e}") from None
    finally:
        loader.dispose()

    v = _Validator(display, os.path.dirname(os.path.abspath(path)), kinds, _zoo())
    if not isinstance(root, _Map):
        raise v.error(1, [], f"the top level must be a mapping with the keys "
                      f"{', '.join(TOP_KEYS)}; got {_describe(root)}")
    v.keys(root, [], root.line, TOP_KEYS, required=("targets",))
    targets = v.targets(root)
    models = v.models(root, targets)
    defaults = v.defaults(root, targets, models)
    manifest = Manifest(path, display, root, targets, models, defaults)
    manifest.files = sorted(v.files)
    return manifest
