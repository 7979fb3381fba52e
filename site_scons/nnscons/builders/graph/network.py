"""Declare the whole node graph of one (manifest, target, model) build: the part shared by
nnscons's own front end (builders/main.py) and the Tool a foreign SConstruct loads
(nnscons.tool / NnsNetwork).

Nothing here touches global SCons state (no SConsignFile, Decider on the default
environment, Default, Alias, Exit, option parsing): the nodes get content signatures through
their own cloned Environment.
"""
from __future__ import annotations

import os

from ... import manifest as manifest_mod
from ...errors import UserError
from ...targets import schemas
from . import console, core_tool, workspace


def load_manifest(path: str):
    return manifest_mod.load_manifest(path, schemas())


def plan(manifest, target: str | None, model: str | None, *, build_dir=None,
         input_path: str | None = None, platform: str | None = None, root: str | None = None,
         calibration: str | None = None):
    """The planned Session. build_dir None: build/<target>/<model folder>. calibration: a
    folder of .npy files, an .npz or an .npy of samples for a float model (the command
    line's calibration=), over the manifest's."""
    import dataclasses

    from .session import Session

    target_cfg, model_cfg = manifest.select(target or None, model or None)
    if input_path and os.path.isdir(input_path):
        raise UserError(f"input={input_path}: is a folder; give one .npy file (numpy.save), or an .npz "
                        f"with one array per model input")
    if input_path and not os.path.isfile(input_path):
        raise UserError(f"input={input_path}: no such file")
    if calibration:
        model_cfg = dataclasses.replace(model_cfg, calibration={"files": calibration_files(calibration)})
    return Session(root or os.getcwd(), manifest, target_cfg, model_cfg, input_path, platform,
                   build_dir=build_dir)


def calibration_files(arg: str) -> list:
    """calibration=PATH: the sample files it names (absolute)."""
    path = os.path.abspath(arg)
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith((".npy", ".npz")))
        if not files:
            raise UserError(f"calibration={arg}: the folder holds no .npy or .npz files")
        return files
    if not os.path.isfile(path):
        raise UserError(f"calibration={arg}: no such file or folder")
    if not path.endswith((".npy", ".npz")):
        raise UserError(f"calibration={arg}: expected a folder of .npy files, an .npz or an .npy")
    return [path]


def _step_printer(session):
    """SCons's PRINT_CMD_LINE_FUNC for this session: prints the step line and notes when
    each step started (matrix build and run seconds); not part of any signature."""
    import time

    def show(line, target, source, env):
        session.step_times.append((line.split(" ", 1)[0], time.monotonic()))
        if line:
            print(line)
    return show


def declare(env, session, *, verbose: bool = False, check_tools: bool = True) -> dict:
    """Every node of the session's build in a clone of env; returns the aliases
    {name: nodes} (not registered: the caller decides what is an alias or a default)."""
    from .nodes import declare as declare_nodes

    env = env.Clone(NNS_OPTIONS=session.options, NNS_VERBOSE=verbose, NNS_SESSION=session,
                    PRINT_CMD_LINE_FUNC=_step_printer(session))
    # content signatures for our nodes only (a foreign SConstruct keeps its own Decider)
    env.Decider("content")
    core_tool.generate(env)
    if check_tools:
        session.kind.check_tools(env, session)      # UserError naming what to install
    session.kind.tool.generate(env)
    env.Tool("compilation_db")
    console.quiet_compiledb(env)
    return declare_nodes(env, session)


__all__ = ["load_manifest", "plan", "declare", "workspace"]
