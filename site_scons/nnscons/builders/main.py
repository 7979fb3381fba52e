"""nnscons's own front end (the SConstruct of ./nnscons and of the `nnscons` command):
read the command line and targets.yaml, plan, declare nodes, and own the global SCons
state a front end owns: the signature database, aliases, defaults, help, exit status.

User mistakes raise UserError anywhere below; they are printed as one clear message
(no traceback) and scons exits with status 2.
"""
from __future__ import annotations

import os
import sys

import atexit
import gc
import json
import time

import SCons.Action
from SCons.Script import (ARGUMENTS, COMMAND_LINE_TARGETS, Alias, BoolVariable, Decider, Default,
                          DefaultEnvironment, Environment, Exit,
                          GetOption, Help, SConsignFile, SetOption, Variables)

from ..errors import UserError
# only what the no-op fast path needs is imported here: the planner's modules (numpy, jinja2,
# the target kinds, the manifest reader) load after its check, when a build is really planned
from . import noop

MANIFEST = "targets.yaml"
_START = time.monotonic()        # a matrix's wall time: from reading the SConstruct to its summary


def _variables():
    v = Variables(None, ARGUMENTS)
    v.Add("target", "target name(s) from targets.yaml, comma-separated, or all (default: defaults.target)", "")
    v.Add("model", "model name(s) from targets.yaml, comma-separated, or all, or a path to an .onnx or "
                   ".tflite file (default: defaults.model)", "")
    v.Add("shard", "i/n: build the i-th of n deterministic slices of the target x model matrix", "")
    v.Add("cache", "a shared build cache folder (default: defaults.cache in targets.yaml)", "")
    v.Add("iterations", "benchmark: N timed inferences after a warm-up, writes bench.json (host; also the "
                        "`bench` alias)", "")
    v.Add("input", "run on this .npy input (float32, or an int8/uint8 model's codes; the model's "
                   "layout) instead of the default input", "")
    v.Add("platform", "where to run (default: the target's run.platform in targets.yaml)", "")
    v.Add("calibration", "a float model's calibration samples: a folder of .npy files, an .npz or an "
                         ".npy (over the manifest's quantization.calibration)", "")
    v.Add("port", "flash: the board's serial port (k210 platform=board: kflash -p)", "")
    v.Add("baud", "flash: the serial port's speed (k210 platform=board: kflash -b)", "")
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
    lines.append("\nAliases: codegen weights goldens firmware run check report quantized compiledb library "
                 "bench tune flash image")
    lines.append("Commands: explain (what the next build would run, and why; builds nothing)")
    return "\n".join(lines) + "\n"


def main() -> None:
    root = os.getcwd()
    _paths_from_launch_dir(root)
    variables = _variables()
    env = Environment(variables=variables, ENV=os.environ.copy(), tools=[])
    if not env["verbose"]:
        # SCons's own progress lines (`Building targets ...`) say nothing the steps do not
        SetOption("no_progress", True)
    try:
        unknown = variables.UnknownVariables()
        if unknown:
            raise UserError(f"unknown option(s) {', '.join(sorted(unknown))}; valid options: "
                            f"target, model, input, platform, shard, cache, iterations, verbose, port, baud (see scons -h)")
        if _default_build():
            lines = noop.check(noop.key(ARGUMENTS))
            if lines is not None:           # nothing changed since the last good build
                def verdicts(target, source, env):
                    print("\n".join(lines))
                    return 0
                # env.Default, not Default: the global one creates SCons's default
                # environment, whose tool detection costs more than the whole answer
                env.Default(env.AlwaysBuild(env.Alias("nnscons-up-to-date", [],
                                                      SCons.Action.Action(verdicts, None))))
                return
        # SCons's default environment (behind the global Alias, Default, Decider and
        # SConsignFile) without tools: its detection of ~15 tools cost 0.03 s, and every step
        # runs in `env`, whose compilers each target kind sets up itself
        DefaultEnvironment(tools=[])
        # Pure content signatures: 'content-timestamp' trusts whole-second mtimes plus size, so a
        # firmware relinked within the same second at the same size would not rerun.
        Decider("content")
        # a source's #includes are rescanned only when it changes (CPPPATH is fixed per target)
        SetOption("implicit_cache", 1)
        from .. import manifest as manifest_mod
        from ..targets import schemas
        manifest = manifest_mod.load_manifest(MANIFEST, schemas())
        if GetOption("help"):
            Help(_help_text(variables, env, manifest), append=False)
            return
        # The planning's other threads (the zoo generator between its random fills,
        # onnxruntime's calibration between passes) wait for the GIL while this one imports
        # and plans: at the default 5 ms switch interval each hand-back waited that long
        # (a cold resnet18 build 5% slower, Zen 4); back to the default for SCons's build
        interval = sys.getswitchinterval()
        sys.setswitchinterval(PLANNING_SWITCH_INTERVAL)
        # no cycle collections while planning (~40 ms of a cold resnet18 build: its import
        # makes few cycles, and what it keeps it keeps); on again for SCons's build phase
        gc.disable()
        try:
            _generate_ahead(env, manifest)
            _build(env, manifest, root)
        finally:
            gc.enable()
            sys.setswitchinterval(interval)
    except UserError as e:
        if GetOption("help"):
            Help(_help_text(variables, env, None) + f"\n(could not read {MANIFEST}: {e})\n")
            return
        sys.stderr.write(f"nnscons: error: {e}\n")
        Exit(2)


PLANNING_SWITCH_INTERVAL = 0.0002    # seconds (sys.setswitchinterval)

_PATH_OPTIONS = ("input", "calibration", "cache")


def _paths_from_launch_dir(root: str) -> None:
    """Run from a subfolder (./nnscons passes -C <project root>, as SCons's -u): a relative
    path given to input=, calibration=, cache= or model= means one from that subfolder;
    rewritten relative to the root the build runs in."""
    from SCons.Script import GetLaunchDir
    launch = GetLaunchDir()
    if not launch or os.path.realpath(launch) == os.path.realpath(root):
        return

    def moved(path: str) -> str:
        return path if not path or os.path.isabs(path) else os.path.relpath(os.path.join(launch, path), root)

    for key in _PATH_OPTIONS:
        if ARGUMENTS.get(key):
            ARGUMENTS[key] = moved(ARGUMENTS[key])
    if ARGUMENTS.get("model"):          # model files (not the manifest's model names)
        ARGUMENTS["model"] = ",".join(
            moved(m) if m.lower().endswith((".onnx", ".tflite")) or os.sep in m
            or os.path.exists(os.path.join(launch, m)) else m for m in ARGUMENTS["model"].split(","))


def _combinations(env, manifest) -> tuple:
    """[(target, model)] from target=/model= (lists, all, shard=) and whether this is a
    matrix build (lists, all or shard: a summary and build/matrix.json at the end)."""
    from .reports import matrix
    t_arg, m_arg, s_arg = env["target"], env["model"], env["shard"]
    is_matrix = bool(s_arg) or any("," in a or a == "all" or a.startswith("all,") or ",all" in a
                                   for a in (t_arg, m_arg))
    if not is_matrix:
        return [(t_arg or None, m_arg or None)], False
    targets = matrix.names(t_arg, manifest.targets, "target")
    models = matrix.names(m_arg, manifest.models, "model")
    combos = []
    for t in targets:
        for m in models:
            tc, mc = manifest.select(t or None, m or None)     # unknown names: one clear error
            combos.append((tc.name, m or mc.name))
    combos = list(dict.fromkeys(combos))
    if s_arg:
        combos = matrix.shard(combos, s_arg)
        if not combos:
            raise UserError(f"shard={s_arg}: this slice of the {len(targets)} x {len(models)} matrix is empty")
    return combos, True


def _default_build() -> bool:
    """A plain build of the default targets: what the no-op fast path may answer."""
    return not (COMMAND_LINE_TARGETS or GetOption("clean") or GetOption("no_exec") or GetOption("help")
                or GetOption("question"))


def _record_noop(key, roots, results, is_matrix) -> None:
    import SCons.Script.Main as scons_main
    from SCons.Script import GetBuildFailures

    from .reports import matrix
    # only a build that ended well (not failed, not interrupted) may answer the next call
    if GetBuildFailures() or scons_main.exit_status or scons_main.this_build_status:
        return
    extra = []
    if is_matrix:
        rows = json.load(open(matrix.MATRIX_JSON, encoding="utf-8"))["combinations"]
        extra = [matrix.table(rows).splitlines()[-1]]
    noop.record(key, roots, [c.session for c in results if c.session], extra)


def _generate_ahead(env, manifest) -> None:
    """A cold build of one zoo model: its generator started on another thread now, while this
    one imports the planner (zoo_cache.prefetch; the planning takes the result).  Only where
    the model's import will run (no model cache yet) and the planning will ask for exactly
    these arguments; anything wrong is left to the planning to report."""
    try:
        combos, is_matrix = _combinations(env, manifest)
        if is_matrix:
            return
        target_cfg, model_cfg = manifest.select(*combos[0])
    except UserError:
        return
    if not model_cfg.zoo:
        return
    from ..planning import zoo_cache
    from .graph.paths import model_cache_file, model_dir
    folder = model_dir(target_cfg, model_cfg)      # the paths the planning will ask for
    if not os.path.exists(model_cache_file(folder)):
        zoo_cache.prefetch(model_cfg.zoo, model_cfg.seed, model_cfg.input_shape,
                           zoo_cache.model_path(folder, model_cfg.zoo))


def _build(env, manifest, root) -> None:
    from ..targets import kind_module
    from .graph import console, network, workspace
    from .reports import matrix
    combos, is_matrix = _combinations(env, manifest)
    iterations = env["iterations"]
    if iterations and not (iterations.isdigit() and int(iterations) > 0):
        raise UserError(f"iterations={iterations}: expected a positive integer")
    env["NNS_ITERATIONS"] = int(iterations or 20)
    SConsignFile(".sconsign", workspace.SignatureRouter())   # one database per target folder
    cache_dir = env["cache"] or manifest.defaults.get("cache")
    if cache_dir:
        from .graph import cache
        cache.enable(env, cache_dir)
    # One lock per target folder: builds of different targets run side by side; a second
    # build of the same target waits for the first.  Taken in sorted order (no deadlock).
    target_names = sorted({manifest.select(t, m)[0].name for t, m in combos})
    env["NNS_LOCKS"] = [workspace.lock(workspace.target_dir(t), t) for t in target_names]
    results, all_aliases = [], {}
    for t, m in combos:
        target_cfg, model_cfg = manifest.select(t, m)
        target_dir = workspace.target_dir(target_cfg.name)
        combo = matrix.Combination(target_cfg.name, model_cfg.name)
        platform = env["platform"] or None
        if is_matrix and platform and platform not in kind_module(target_cfg.kind).SCHEMA["run"]["platform"]:
            platform = None          # in a matrix, platform= applies to the targets that have it
        try:
            with workspace.cleanup_on_error(target_dir):
                session = network.plan(manifest, t, m, input_path=env["input"] or None,
                                       platform=platform, root=root,
                                       calibration=env["calibration"] or None)
            aliases = network.declare(env, session, verbose=env["verbose"],
                                      check_tools=not GetOption("clean"))
        except UserError as e:
            if not is_matrix:
                raise
            combo.reason = str(e)
            all_aliases.setdefault("check", []).extend(_failed_node(env, combo))
            results.append(combo)
            continue
        combo.session, combo.aliases = session, aliases
        combo.out_dir = os.path.dirname(str(aliases["run"][0]))
        results.append(combo)
        for name, nodes in aliases.items():
            all_aliases.setdefault(name, []).extend(nodes)
    for name, nodes in all_aliases.items():
        Alias(name, nodes)
    for step in ("bench", "tune"):     # SCons would say `Do not know how to make File target`
        if step in COMMAND_LINE_TARGETS and not all_aliases.get(step):
            raise UserError(f"'{step}': no target of this build has a {step} step (it times the "
                            f"firmware on this machine: host targets that run natively, not under qemu)")
    _known_targets(COMMAND_LINE_TARGETS, set(all_aliases) | {"explain", "bench"}, root)
    if "explain" in COMMAND_LINE_TARGETS:
        _explain_alias(env, results)
    # codegen: every generated file, the ones no step compiles too (gap9's SDK Makefile)
    # a combination with an `image` alias (k210 platform=board) builds that by default instead
    # of its run, report and check, which need a board
    no_board = {id(n) for c in results if c.aliases and "image" in c.aliases
                for k in ("check", "report") for n in c.aliases[k]}
    defaults = [n for k in ("check", "report", "quantized", "compiledb", "model", "codegen", "image")
                for n in all_aliases.get(k, []) if id(n) not in no_board]
    if _default_build():
        console.verdict_last(env, results)
    Default(defaults if env["verbose"] else console.quiet_default(env, defaults))
    if iterations:
        if not all_aliases.get("bench"):
            raise UserError("iterations=: no target of this build has a benchmark mode (host only)")
        Default(all_aliases["bench"])
    if _default_build() and not any(c.session is None for c in results):
        key = noop.key(ARGUMENTS)
        noop.forget(key)                  # only a build that ends well records again
        atexit.register(_record_noop, key, defaults, results, is_matrix)
    if GetOption("num_jobs") > 1:
        import_packages_before_threads()
    if is_matrix and not GetOption("clean") and not GetOption("no_exec"):
        # one combination's failure must not stop the others: ./nnscons and the nnscons
        # command pass -k for matrix builds (SCons does not let an SConstruct set it)
        if not GetOption("keep_going"):
            sys.stderr.write("nnscons: note: a matrix build stops at its first failure without -k "
                             "(./nnscons adds it)\n")
        atexit.register(_matrix_summary, results)



def import_packages_before_threads() -> None:
    """With -j the build steps run on SCons' worker threads and import what they need on
    first use. Two threads importing one package for the first time can deadlock on
    Python's module locks: a package's __init__ importing its submodules (frontends,
    passes, kernelgen, reference) while the other thread, already holding a submodule's
    lock, waits for that package. Python breaks the deadlock by handing one of them a
    half-initialized module (`cannot import name 'OnnxWalker' from partially initialized
    module`). Initializing every package here, on the main thread, before any step runs
    leaves the threads only module imports, which cannot form that circle (no module
    imports another circularly: tests/test_import_cycles.py). The target kinds' packages
    are imported by the planning already. ~15 ms where the planner's imports are done."""
    import importlib
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "targets" and not d.startswith((".", "_")))
        if "__init__.py" in files:
            rel = os.path.relpath(folder, os.path.dirname(root))
            importlib.import_module(rel.replace(os.sep, "."))

def _known_targets(requested, aliases: set, root: str) -> None:
    """Every command-line target is an alias or a path that exists (or one under build/, the
    build's own files): else a message with the closest alias, not SCons's `Do not know how
    to make File target`."""
    import difflib
    for t in requested:
        if t in aliases or os.path.exists(os.path.join(root, t)) or os.path.exists(t) \
                or os.path.normpath(t).split(os.sep)[0] == "build":
            continue
        close = difflib.get_close_matches(t, sorted(aliases), n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise UserError(f"'{t}' is not something this build makes: {hint}the aliases are "
                        f"{', '.join(sorted(aliases))} (or a file's path under build/)")


def _explain_alias(env, combos) -> None:
    """`explain`: print what the next build would run and why, building nothing."""
    from . import explain

    def run(target, source, env):
        for c in combos:
            if c.session is None:
                print(f"explain [{c.target}] {c.model}: cannot be planned: {c.reason}")
                continue
            board = "image" in c.aliases            # what the default build makes (see _build)
            roots = [n for k in (("image",) if board else ("check", "report")) + ("quantized", "model", "codegen")
                     for n in c.aliases.get(k, [])]
            explain.print_explanation(c.session, roots)
        return 0
    env.AlwaysBuild(Alias("explain", [], SCons.Action.Action(run, None)))


def _failed_node(env, combo):
    """A node that fails with the reason a combination could not be planned."""
    def fail(target, source, env):
        print(f"PLAN FAILED [{combo.target}] {combo.model}: {combo.reason}")
        return 1
    node = env.Command(os.path.join("build", ".failed", f"{combo.target}--{combo.model}"), [],
                       SCons.Action.Action(fail, None))
    env.AlwaysBuild(node)
    return node


def _matrix_summary(results) -> None:
    from SCons.Script import GetBuildFailures

    from .reports import matrix
    failures = {}
    for f in GetBuildFailures():
        path = str(f.node)
        for c in results:
            if c.session and path.startswith(c.session.build_dir + os.sep) \
                    or path.endswith(f"{c.target}--{c.model}"):
                failures.setdefault((c.target, c.model), f"{path}: {f.errstr}" if c.session else c.reason)
    rows = matrix.summarize(results, failures, matrix.timings(results))
    wall_s = round(time.monotonic() - _START, 3)
    matrix.write(rows, wall_s=wall_s)
    from .reports import html
    from ..fileio import write_if_changed
    write_if_changed(os.path.join("build", "matrix.html"), html.build_matrix_page(rows, wall_s))
    print(matrix.table(rows, wall_s))
