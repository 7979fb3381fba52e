"""nnscons's own front end (the SConstruct of ./nnscons and of the `nnscons` command):
read the command line and targets.yaml, plan, declare nodes, and own the global SCons
state a front end owns: the signature database, aliases, defaults, help, exit status.

User mistakes raise UserError anywhere below; they are printed as one clear message
(no traceback) and scons exits with status 2.
"""
from __future__ import annotations

import os
import sys

from SCons.Script import (ARGUMENTS, Alias, BoolVariable, Decider, Default,
                          Environment, Exit, GetOption, Help, SConsignFile, Variables)

from ..errors import UserError
from . import network, workspace

MANIFEST = "targets.yaml"


def _variables():
    v = Variables(None, ARGUMENTS)
    v.Add("target", "target name from targets.yaml (default: defaults.target)", "")
    v.Add("model", "model name from targets.yaml, or a path to an .onnx file (default: defaults.model)", "")
    v.Add("input", "run on this float32 .npy input (model layout) instead of the default input", "")
    v.Add("platform", "where to run (default: the target's run.platform in targets.yaml)", "")
    v.Add(BoolVariable("verbose", "print full command lines instead of one line per node", False))
    return v


def _help_text(variables, env, manifest) -> str:
    lines = ["nnscons: scons target=T model=M [platform=P] [input=x.npy] [verbose=1] [-j N] [-c]", "",
             "Options:", variables.GenerateHelpText(env)]
    if manifest is not None:
        lines.append(f"Targets in {MANIFEST}:")
        for name, t in manifest.targets.items():
            lines.append(f"  {name:<16} kind {t.kind}" + (f" -- {t.description}" if t.description else ""))
        lines.append(f"\nModels in {MANIFEST}:")
        for name, m in manifest.models.items():
            src = f"zoo {m.zoo}" if m.zoo else os.path.relpath(m.source)
            lines.append(f"  {name:<16} {src}")
        d = manifest.defaults
        lines.append(f"\nDefaults: target={d.get('target', '-')} model={d.get('model', '-')}")
    lines.append("\nAliases: codegen weights goldens firmware run check report quantized compiledb")
    return "\n".join(lines) + "\n"


def main() -> None:
    root = os.getcwd()
    # Pure content signatures: 'content-timestamp' trusts whole-second mtimes plus size, so a
    # firmware relinked within the same second at the same size would not rerun.
    Decider("content")
    variables = _variables()
    env = Environment(variables=variables, ENV=os.environ.copy(), tools=[])
    try:
        unknown = variables.UnknownVariables()
        if unknown:
            raise UserError(f"unknown option(s) {', '.join(sorted(unknown))}; valid options: "
                            f"target, model, input, platform, verbose (see scons -h)")
        manifest = network.load_manifest(MANIFEST)
        if GetOption("help"):
            Help(_help_text(variables, env, manifest), append=False)
            return
        _build(env, manifest, root)
    except UserError as e:
        if GetOption("help"):
            Help(_help_text(variables, env, None) + f"\n(could not read {MANIFEST}: {e})\n")
            return
        sys.stderr.write(f"nnscons: error: {e}\n")
        Exit(2)


def _build(env, manifest, root) -> None:
    target_cfg, _ = manifest.select(env["target"] or None, env["model"] or None)
    target_dir = workspace.target_dir(target_cfg.name)
    # One signature database and one lock per target folder: builds of different targets
    # run side by side; a second build of the same target waits for the first.
    env["NNS_LOCK"] = workspace.lock(target_dir, target_cfg.name)
    SConsignFile(os.path.join(target_dir, ".sconsign"))
    with workspace.cleanup_on_error(target_dir):
        session = network.plan(manifest, env["target"], env["model"], input_path=env["input"] or None,
                               platform=env["platform"] or None, root=root)
    aliases = network.declare(env, session, verbose=env["verbose"], check_tools=not GetOption("clean"))
    for name, nodes in aliases.items():
        Alias(name, nodes)
    # codegen: every generated file, the ones no step compiles too (gap9's SDK Makefile)
    Default(aliases["check"], aliases["report"], aliases["quantized"], aliases["compiledb"],
            aliases["model"], aliases["codegen"])
