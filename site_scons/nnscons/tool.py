"""The SCons Tool a firmware repo's SConstruct loads:

    import nnscons
    env = Environment(tools=["default", nnscons.tool])
    lib, header = env.NnsNetwork("nn", manifest="nn.yaml", model="net", target="host")
    env.Program("app", ["main.c", lib], CPPPATH=[header.dir])
    env.Alias("export", lib.aliases["export"])      # nn/export/: the standalone export

(or `env.NnsExport("nn", manifest=..., model=..., target=...)` alone: the export's nodes.)

NnsNetwork declares the same per-layer nodes as `./nnscons` (codegen, weights, goldens,
compile, library, harness, run, check, report) under `folder`, relative to the calling
SConscript, and returns (library nodes, header node).  Building `lib` builds only what the
library needs; the harness run and its check are in the returned nodes' `.nns` aliases
(see NnsNetwork's return).  It touches no global SCons state: no SConsignFile, Decider on
other environments, Default, Alias, Exit or option parsing.  Several calls (models,
targets) in one SConstruct work side by side.  A user mistake raises SCons.Errors.UserError
with the same text as ./nnscons prints.
"""
from __future__ import annotations

import os

import SCons.Errors

from .errors import UserError


class NetworkNodes(list):
    """The library node list, with the build's other nodes as attributes: .header,
    .run (run.log, output.npy), .check (the verdict), .report, .aliases (every group)."""


def NnsNetwork(env, folder, manifest="targets.yaml", model=None, target=None, platform=None,
               input=None):   # noqa: A002 - the option's name on the command line
    from .builders.graph import network

    try:
        man = env.File(manifest).srcnode().abspath
        build_dir = env.Dir(folder).path
        input_path = env.File(input).srcnode().abspath if input else None
        mf = network.load_manifest(man)
        session = network.plan(mf, target, model, build_dir=build_dir, input_path=input_path,
                               platform=platform, root=env.Dir("#").abspath)
        aliases = network.declare(env, session, verbose=bool(env.get("NNS_VERBOSE", False)))
    except UserError as e:
        raise SCons.Errors.UserError(str(e)) from None
    library = aliases.get("library")
    if not library:
        raise SCons.Errors.UserError(f"target kind '{session.kind.__name__.rsplit('.', 1)[-1]}' does "
                                     f"not build a library yet")
    lib = [n for n in library if str(n).endswith(".a")]
    header = next(n for n in library if str(n).endswith(".h"))
    nodes = NetworkNodes(lib)
    nodes.header, nodes.aliases = header, aliases
    nodes.run, nodes.check, nodes.report = aliases["run"], aliases["check"], aliases["report"]
    return nodes, header


def NnsExport(env, folder, manifest="targets.yaml", model=None, target=None, platform=None,
              input=None):   # noqa: A002
    """The standalone export of the same network: its nodes (<folder>/[<platform>/]export/:
    sources, kernels, weights, header, Makefile, CMakeLists.txt), nothing else built."""
    nodes, _ = NnsNetwork(env, folder, manifest=manifest, model=model, target=target, platform=platform,
                          input=input)
    export = nodes.aliases.get("export")
    if not export:
        raise SCons.Errors.UserError(f"model={model} target={target}: this target kind builds no library to "
                                     f"export")
    return export


def generate(env):
    env.AddMethod(NnsNetwork, "NnsNetwork")
    env.AddMethod(NnsExport, "NnsExport")


def exists(env):
    return True


def tool(env):
    """`Environment(tools=["default", nnscons.tool])`: SCons calls a callable tool with the
    environment."""
    generate(env)


tool.generate = generate
tool.exists = exists
