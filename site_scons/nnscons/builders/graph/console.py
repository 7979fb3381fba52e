"""What a build prints besides its own step lines: as little as says what happened.

A build prints one `VERB label [target]` line per step that ran, then the table and the
verdict.  SCons on its own adds `scons: 'X' is up to date.` for every up-to-date node given
as a default, `Building compilation database ...` on every build (its builder is always
built) and prints steps in the order of the default list, the verdict before the model or
the library's files.  verbose=1 keeps SCons's own lines.
"""
from __future__ import annotations

import SCons.Action


def _nothing(target, source, env):
    return 0


def quiet_default(env, nodes):
    """One default node in place of `nodes`: an alias that always runs a silent action.
    SCons reports an up-to-date top-level target with a line of its own; an alias that
    always runs is never up to date, and its children are not top-level."""
    alias = env.Alias("nnscons-default", nodes, SCons.Action.Action(_nothing, None))
    env.AlwaysBuild(alias)
    return alias


def verdict_last(env, combos) -> None:
    """In a default build, each combination's CHECK (which prints the table and the verdict)
    after that combination's other default nodes (model, generated files, quantized.onnx,
    compilation database): order only (Requires), no signature changes, also with -j."""
    for c in combos:
        check = getattr(c.session, "check_node", None) if c.session else None
        if not check:
            continue
        before = [n for k in ("quantized", "compiledb", "model", "codegen") for n in c.aliases.get(k, [])]
        env.Requires(check, before)


def quiet_compiledb(env) -> None:
    """The compilation database (rebuilt by SCons's builder on every build: it is always
    built) is written silently: editor metadata, not a step of the network's build;
    verbose=1 prints SCons's `Building compilation database` line."""
    if env.get("NNS_VERBOSE"):
        return
    from SCons.Tool import compilation_db
    builder = env["BUILDERS"]["CompilationDatabase"]
    builder.action = SCons.Action.Action(compilation_db.write_compilation_db, None)
