"""gvsoc-gap9: GreenWaves' own GVSoC model of GAP9 as a bare-metal Simulator (baremetal.py).

The model (release-v4.13.0; ../shared/gap9-gvsoc/NOTES.md): 9 cluster cores, 128 KiB L1 in 16
banks with bank conflicts modelled, mchan at another alias, NE16; no uDMA, so no L3. It runs a
program with `$GAP9_GVSOC/run.sh prog.elf workdir`.
"""
from __future__ import annotations

import os
import shutil

from ...errors import UserError
from . import baremetal
from .chip import Simulator

GAP9_INSTALL_HINT = ("install it with `bash ../shared/gap9-gvsoc/install.sh DIR` (the folder beside this "
                     "repository; DIR e.g. ~/.cache/nnscons/gap9-gvsoc) and set GAP9_GVSOC=DIR, or put "
                     "shared/gap9-gvsoc beside the project and nnscons installs it into build/tools")


# where the GAP9 model is installed from ../shared/gap9-gvsoc when GAP9_GVSOC is unset: inside
# the project's build/ (nothing outside it is written), shared by every target and model
LOCAL_GAP9_MODEL = os.path.join("build", "tools", "gap9-gvsoc")


def _shared_installer() -> str | None:
    """../shared/gap9-gvsoc/install.sh beside the project (the folder SCons runs in)."""
    path = os.path.join(os.path.dirname(os.getcwd()), "shared", "gap9-gvsoc", "install.sh")
    return path if os.path.isfile(path) else None


def _run_sh(home: str) -> str | None:
    run_sh = os.path.join(home, "run.sh")
    return os.path.abspath(run_sh) if os.path.isfile(run_sh) and os.access(run_sh, os.X_OK) else None


def find_gap9_model(install: bool = False) -> str | None:
    """The GAP9 model's run.sh: $GAP9_GVSOC (the install folder holding it) when set; else the
    project's own install in build/tools, made from ../shared/gap9-gvsoc when that is beside
    the project and `install` is true (about a second: a prebuilt; published by one rename,
    so an interrupted install leaves nothing that is used)."""
    home = os.environ.get("GAP9_GVSOC")
    if home:
        return _run_sh(home)
    if os.path.isfile(os.path.join(LOCAL_GAP9_MODEL, ".installed")):
        return _run_sh(LOCAL_GAP9_MODEL)
    installer = _shared_installer()
    if not (install and installer and shutil.which(baremetal.CC)):
        return None
    import subprocess
    import tempfile
    os.makedirs(os.path.dirname(LOCAL_GAP9_MODEL), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gap9-gvsoc.", dir=os.path.dirname(LOCAL_GAP9_MODEL))
    print(f"nnscons: installing GVSoC's GAP9 model from {installer} into {LOCAL_GAP9_MODEL}")
    proc = subprocess.run(["bash", installer, tmp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode or not os.path.isfile(os.path.join(tmp, ".installed")):
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"nnscons: the GAP9 model's installer failed:\n{proc.stdout[-2000:]}")
        return None
    try:
        os.rename(tmp, LOCAL_GAP9_MODEL)
    except OSError:         # another build installed it first
        shutil.rmtree(tmp, ignore_errors=True)
    return _run_sh(LOCAL_GAP9_MODEL)


def require_gap9_model(target_name: str) -> str:
    path = find_gap9_model(install=True)
    if path:
        return path
    home = os.environ.get("GAP9_GVSOC")
    why = (f"GAP9_GVSOC={home} holds no executable run.sh" if home else
           "GAP9_GVSOC is unset and no ../shared/gap9-gvsoc beside the project to install it from")
    raise UserError(f"target '{target_name}' platform=gvsoc-gap9: GVSoC's GAP9 model not found ({why}); "
                    f"{GAP9_INSTALL_HINT}; or use platform=emul")



def no_l3_memory(opts) -> None:
    """What the model implies for a GAP9 target's memory: no uDMA, so no L3 (every parameter
    lives in L2; a network that does not fit runs layer by layer), and the program's code, data
    and FC stack in L2 (the bare-metal runtime's layout, baremetal.py)."""
    m = opts["memory"]
    m["l3_threshold"] = 1 << 40
    m["l3_size"] = 0
    m["l2_reserved"] = max(m["l2_reserved"], baremetal.MIN_L2_RESERVED)


SIMULATOR = Simulator(
    platform="gvsoc-gap9",
    find=find_gap9_model,
    require=require_gap9_model,
    # run.sh prepares the model's configuration in the work dir and runs from there
    command=lambda run_sh, elf, work: [run_sh, os.path.abspath(elf), os.path.abspath(work)],
    cycles_source=("gvsoc-gap9: GreenWaves' GVSoC model of GAP9 (release-v4.13.0: 9 cluster cores, 128 KiB L1 "
                   "in 16 banks with bank conflicts, mchan DMA; clocks fixed, no L3); " + baremetal.CYCLES +
                   "; tcdm_contention = cycles the cores lost to L1 bank conflicts"),
    defines=("NN_OPEN_CHIP_GAP9",),
    runtime_name="GAP9",
    cores=9,            # the runtime forks on every core (measured faster than 8 workers)
    memory=no_l3_memory,
)
