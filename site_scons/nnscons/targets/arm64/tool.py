"""SCons Tool for the `arm64` target kind: the aarch64 cross compiler (static binaries)
and the run step: under qemu-aarch64 -cpu <run.cpu>, natively, or on a board over ssh."""
import os
import shlex

import SCons.Action
import SCons.Builder

from nnscons.builders.graph import actions
from nnscons.builders.run.hostrun import run_native, run_program
from nnscons.errors import UserError
from nnscons import binfiles


def ssh_commands(opts, firmware, bin_dir, output_bin):
    """The command lines of a run on a board: make the remote folder, copy the firmware and
    the .bin files, run it there (its stdout is run.log), fetch output.bin."""
    run = opts["run"]
    host, rdir = run["host"], run["dir"].rstrip("/") or "/tmp/nnscons"
    # the input and the goldens (the weights are linked into the firmware)
    bins = sorted(os.path.join(bin_dir, f) for f in os.listdir(bin_dir) if f != "weights")
    q = shlex.quote
    return [
        [run["ssh"], host, f"rm -rf {q(rdir)} && mkdir -p {q(rdir + '/bin')}"],
        [run["scp"], "-q", firmware, f"{host}:{rdir}/firmware"],
        [run["scp"], "-q", "-r"] + bins + [f"{host}:{rdir}/bin/"],
        [run["ssh"], host, f"cd {q(rdir)} && ./firmware bin {binfiles.OUTPUT}"],
        [run["scp"], "-q", f"{host}:{rdir}/{binfiles.OUTPUT}", output_bin],
    ]


def run_arm64(target, source, env):
    session = env["NNS_SESSION"]
    opts = session.options
    platform = opts["run"]["platform"]
    if platform == "qemu":
        return run_native(target, source, env, prefix=[opts["run"]["qemu"], "-cpu", opts["run"]["cpu"]])
    if platform == "native":
        return run_native(target, source, env)
    return _run_ssh(target, source, env, session)


def _run_ssh(target, source, env, session):
    from nnscons.builders.run import runlog
    from nnscons.fileio import write_if_changed
    log_path, npy_path = str(target[0]), str(target[1])
    output_bin = binfiles.output_path(os.path.dirname(log_path))
    timeout = session.options["run"]["timeout"]
    cmds = ssh_commands(session.options, source[0].abspath, env["NNS_BIN_DIR"], output_bin)
    log = ""
    for i, cmd in enumerate(cmds):
        status, text = run_program(cmd, timeout, show=env["NNS_VERBOSE"])
        if i == 3:
            log = text
            ok = status in (0, 1)
        else:
            ok = status == 0
        if not ok:
            print(f"RUN FAILED [{session.target_cfg.name}]: {' '.join(shlex.quote(c) for c in cmd)} "
                  f"exited with status {status}:\n" + "\n".join(text.splitlines()[-15:]))
            return 1
    runlog.write_output(session, output_bin, npy_path)
    write_if_changed(log_path, log)
    return 0


def generate(env):
    opts = env["NNS_OPTIONS"]
    env.Tool("gcc")
    env.Tool("as")
    env.Tool("gnulink")
    env.Tool("ar")
    from nnscons.targets.base import cross_ar
    cc = opts["toolchain"]["cc"]
    env.Replace(CC=cc, AS=cc, LINK=cc, AR=cross_ar(cc),
                CFLAGS=list(opts["toolchain"]["cflags"]), LINKFLAGS=list(opts["toolchain"]["ldflags"]))
    env["BUILDERS"]["NnsRun"] = SCons.Builder.Builder(
        action=SCons.Action.Action(run_arm64, actions.label))


def check_tools(env, session) -> None:
    name = session.target_cfg.name
    cc = session.options["toolchain"]["cc"]
    if not env.Detect(cc):
        raise UserError(f"target '{name}': C compiler '{cc}' not found on PATH; install it "
                        f"(Debian: apt-get install gcc-aarch64-linux-gnu) or set targets.{name}.toolchain.cc")
    run = session.options["run"]
    need = {"qemu": [("qemu", "qemu-user")], "ssh": [("ssh", "openssh-client"), ("scp", "openssh-client")]}
    for key, pkg in need.get(run["platform"], []):
        if not env.Detect(run[key]):
            raise UserError(f"target '{name}': '{run[key]}' not found on PATH; install it "
                            f"(Debian: apt-get install {pkg}) or set targets.{name}.run.{key}")


def exists(env):
    from ..base import tools_exist
    return tools_exist(check_tools, env)
