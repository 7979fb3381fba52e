"""The GAP SDK and gvsoc: finding them, their compiler settings, and a gvsoc run."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from ...errors import UserError


@dataclass
class Sdk:
    home: str


def find_sdk():
    home = os.environ.get("GAP_SDK_HOME")
    if home and os.path.isdir(home):
        return Sdk(home=home)
    gv = shutil.which("gvsoc")
    if gv:
        return Sdk(home=os.path.dirname(os.path.dirname(gv)))
    return None


def require_sdk(target_name):
    sdk = find_sdk()
    if sdk is None:
        raise UserError(f"target '{target_name}' platform=gvsoc: the GAP SDK was not found: set GAP_SDK_HOME "
                        f"to its folder and source its sourceme.sh (which puts gvsoc and the RISC-V gcc on "
                        f"PATH), or use platform=emul / platform=qemu")
    return sdk
