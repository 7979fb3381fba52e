"""targets.yaml's schema: its keys, the formats it names and the typed configs a
validated manifest hands out (manifest.py loads, manifest_check.py validates)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional


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
