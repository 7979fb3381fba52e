"""SCons Tool for the `aie2p` target kind (AMD NPU, npu2).

NnsAieCmd  runs one external command (env NNS_CMD, a list; optional NNS_CWD, NNS_ENV
           extra variables, NNS_STDOUT: write stdout to the target). The command line is
           part of the node's signature.
NnsAieRun  runs the network (NNS_CMD + [build dir, output.bin]) and writes run.log and
           output.npy. Tools are found by targets/aie2p/tools.py (MLIR_AIE_DIR,
           PEANO_INSTALL_DIR, PATH); check_tools names what is missing.
"""
import os
import shutil
import subprocess

import SCons.Action
import SCons.Builder

from nnscons.builders.graph import actions
from nnscons.builders.run import runlog
from nnscons.builders.run.hostrun import run_native
from nnscons.resources import PACKAGE_DIR
from nnscons.fileio import write_if_changed
from nnscons import binfiles
from nnscons.errors import UserError

from .tools import find_tools


def _env(env):
    e = dict(env["ENV"])
    for k, v in (env.get("NNS_ENV") or {}).items():
        e[k] = v
    return e


def _show(env, cmd):
    if env["NNS_VERBOSE"]:
        cwd = env.get("NNS_CWD")
        print(("cd %s && " % cwd if cwd else "") + " ".join(cmd))


def run_command(target, source, env):
    cmd = [str(c) for c in env["NNS_CMD"]]
    _show(env, cmd)
    try:
        proc = subprocess.run(cmd, cwd=env.get("NNS_CWD") or None, env=_env(env),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        print(f"{env['NNS_VERB']} FAILED [{env['NNS_TARGET']}] {env['NNS_LABEL']}: {cmd[0]}: {e}")
        return 1
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).decode("utf-8", "replace").splitlines()[-20:]
        print(f"{env['NNS_VERB']} FAILED [{env['NNS_TARGET']}] {env['NNS_LABEL']} "
              f"(exit {proc.returncode}): {' '.join(cmd)}\n" + "\n".join(err))
        return 1
    if env.get("NNS_STDOUT"):
        write_if_changed(str(target[0]), proc.stdout)
    return 0


def run_network(target, source, env):
    session = env["NNS_SESSION"]
    b = session.build_dir
    out_bin = binfiles.output_path(b)
    cmd = [str(c) for c in env["NNS_CMD"]] + [b, out_bin]
    _show(env, cmd)
    e = _env(env)
    # the runner imports nnscons: the folder holding the package, checkout or installed
    e["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(PACKAGE_DIR), e.get("PYTHONPATH", "")) if p)
    timeout = session.options["run"]["timeout"]
    t = session.target_cfg.name
    try:
        proc = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"RUN FAILED [{t}]: no result after {timeout} s (targets.{t}.run.timeout)")
        return 1
    text = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0 or not os.path.isfile(out_bin):
        tail = "\n".join(text.splitlines()[-15:])
        print(f"RUN FAILED [{t}]: {' '.join(cmd[:3])} exited with status {proc.returncode}:\n{tail}")
        return 1
    runlog.write_output(session, out_bin, str(target[1]))
    write_if_changed(str(target[0]), text)
    return 0


def generate(env):
    # platform=emul: the library and its harness (C, C++ kernels, .S weights), run natively
    for tool in ("gcc", "g++", "as", "gnulink", "ar"):
        env.Tool(tool)
    env["BUILDERS"]["NnsNativeRun"] = SCons.Builder.Builder(
        action=SCons.Action.Action(run_native, actions.label))
    env["BUILDERS"]["NnsAieCmd"] = SCons.Builder.Builder(action=SCons.Action.Action(
        run_command, actions.label, varlist=["NNS_CMD", "NNS_CWD", "NNS_ENV", "NNS_STDOUT"]))
    env["BUILDERS"]["NnsAieRun"] = SCons.Builder.Builder(action=SCons.Action.Action(
        run_network, actions.label, varlist=["NNS_CMD"]))


def check_tools(env, session) -> None:
    opts, name = session.options, session.target_cfg.name
    if opts["run"]["platform"] == "emul":
        if not shutil.which(opts["toolchain"]["cxx"], path=env["ENV"].get("PATH")):
            raise UserError(f"target '{name}' (platform=emul): C++ compiler "
                            f"'{opts['toolchain']['cxx']}' not found on PATH; install it "
                            f"(Debian: apt-get install g++) or set targets.{name}.toolchain.cxx")
        return
    tools = find_tools(env["ENV"], opts)
    missing = [m for m in tools["missing"]]
    if missing:
        raise UserError(f"target '{name}' (platform=npu) needs " + "; ".join(missing)
                        + ". Or run without the NPU toolchain: platform=emul")


def exists(env):
    """Whether this target's tools (compiler, emulator or SDK of the chosen platform) are
    here: the same check that names what to install (check_tools)."""
    from ..base import tools_exist
    return tools_exist(check_tools, env)
