"""targets.yaml: load, validate, and select a (target, model) pair.

Every error is a ManifestError of the form
    targets.yaml:14: models.resnet18.targets.host.layers.conv1.l1_budgt: unknown key; expected one of: l1_budget
i.e. file, line, dotted key path, what was wrong, the valid choices and, where it
helps, a hint. Target kinds are plug-ins: their schemas are passed in as `kinds`
({kind: {section: {key: type}}}, the "layer" section being the per-layer override
keys), so this module knows nothing about specific targets. A type is "str", "int",
"bool", "size" (stored as int bytes), "list[str]", "path" (stored absolute, relative
to the manifest's folder) or a list of allowed values. Nothing is defaulted here
beyond what the schema (manifest_schema.py) states; targets fill in their own defaults.

The schema and configs live in manifest_schema.py, the YAML loader in manifest_yaml.py,
the validation in manifest_check.py; this module loads and selects (and names them all).
"""
from __future__ import annotations

import hashlib
import os
from typing import Optional

import yaml

from .errors import ManifestError
from .manifest_check import _Validator
from .manifest_schema import (  # noqa: F401  (the schema and configs, also by this module's name)
    CALIBRATION_KEYS, DEFAULTS_KEYS, FORMATS, LAYER_SECTION, MAX_INPUT_ELEMENTS, MODEL_KEYS,
    MODEL_SUFFIXES, TARGET_KEYS, TOP_KEYS, ModelConfig, TargetConfig)
from .manifest_yaml import _DuplicateKey, _Loader, _Map, _Seq, _describe, _dotted


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


def _unreadable(display: str, data: bytes, e) -> ManifestError:
    line = data[:max(e.position, 0)].count(b"\n") + 1
    return ManifestError(f"{display}:{line}: invalid YAML: character #x{e.character:04x} is not allowed "
                         f"in a YAML file; is the file binary or mis-encoded? Save it as UTF-8 text")


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
        raise _unreadable(display, data, e) from None
    try:
        root = loader.get_single_data()
    except yaml.reader.ReaderError as e:     # libyaml's reader finds it while parsing
        raise _unreadable(display, data, e) from None
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
