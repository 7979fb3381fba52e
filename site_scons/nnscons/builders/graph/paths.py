"""Where a combination's build goes: light enough for the SConstruct's first steps (the zoo
model's head start in builders/main.py), before the planner's modules are imported."""
from __future__ import annotations

import os
import re

from ... import names


def path_component(name: str) -> str:
    """A manifest or file-stem name as one safe directory name under build/."""
    if re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*", name) and name not in (".", ".."):
        return name
    return names.c_names([name])[name]


def model_dir(target_cfg, model_cfg) -> str:
    """build/<target>/<model folder>: the default build folder of a combination."""
    return os.path.join("build", path_component(target_cfg.name),
                        path_component(model_cfg.folder or model_cfg.name))


def model_cache_file(folder: str) -> str:
    """The imported model's cache in a build folder (planning/model_cache.py)."""
    return os.path.join(folder, "cache", "model.pkl")
