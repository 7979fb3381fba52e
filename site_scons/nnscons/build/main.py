"""What the SConstruct does: read the command line and targets.yaml, plan, declare nodes.

User mistakes raise UserError anywhere below; they are printed as one clear message
(no traceback) and scons exits with status 2.
"""
from __future__ import annotations

import os
import sys

from SCons.Script import (ARGUMENTS, Alias, BoolVariable, Decider, Default,
                          Environment, Exit, GetOption, Help, SConsignFile, Variables)

from .. import manifest as manifest_mod
from ..errors import UserError
from ..targets import schemas

MANIFEST = "targets.yaml"


def _variables():
    v = Variables(None, ARGUMENTS)
    v.Add("target", "target name from targets.yaml (default: defaults.target)", "")
    v.Add("model", "model name from targets.yaml, or a path to an .onnx file (default: defaults.model)", "")
    v.Add("input", "run on this float32 .npy input (model layout) instead of the default input", "")
    v.Add("platform", "where to run (default: the target's run.platform in targets.yaml)", "")
    v.Add("iterations", "benchmark: N timed inferences after a warm-up, writes bench.json (host; also the `bench` alias)", "")
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
    lines.append("\nAliases: codegen weights goldens firmware run check report quantized compiledb bench tune")
    return "\n".join(lines) + "\n"


def main() -> None:
    root = os.getcwd()
    if root not in sys.path:
        sys.path.insert(0, root)  # models/zoo
    SConsignFile(os.path.join("build", ".sconsign"))
    # Pure content signatures: 'content-timestamp' trusts whole-second mtimes plus size, so a
    # firmware relinked within the same second at the same size would not rerun.
    Decider("content")
    variables = _variables()
    env = Environment(variables=variables, ENV=os.environ.copy(), tools=[])
    try:
        unknown = variables.UnknownVariables()
        if unknown:
            raise UserError(f"unknown option(s) {', '.join(sorted(unknown))}; valid options: "
                            f"target, model, input, platform, iterations, verbose (see scons -h)")
        manifest = manifest_mod.load_manifest(MANIFEST, schemas())
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
    from ..build.nodes import declare
    from ..build.session import Session

    target_cfg, model_cfg = manifest.select(env["target"] or None, env["model"] or None)
    input_path = env["input"] or None
    if input_path and not os.path.isfile(input_path):
        raise UserError(f"input={input_path}: no such file")
    session = Session(root, manifest, target_cfg, model_cfg, input_path, env["platform"] or None)
    iterations = env["iterations"]
    if iterations and not (iterations.isdigit() and int(iterations) > 0):
        raise UserError(f"iterations={iterations}: expected a positive integer")
    env.Replace(NNS_OPTIONS=session.options, NNS_VERBOSE=env["verbose"],
                NNS_ITERATIONS=int(iterations or 20))
    env.Tool("nnscons_core")
    if not GetOption("clean"):
        session.kind.check_tools(env, session)  # UserError naming what to install
    env.Tool(session.kind.TOOL)
    env.Tool("compilation_db")
    aliases = declare(env, session)
    for name, nodes in aliases.items():
        Alias(name, nodes)
    Default(aliases["check"], aliases["report"], aliases["quantized"], aliases["compiledb"],
            aliases["model"])
    if iterations:
        if "bench" not in aliases:
            raise UserError(f"iterations=: target kind '{target_cfg.kind}' has no benchmark mode (host only)")
        Default(aliases["bench"])
