"""The cortex-m tests' shared set-up: CMSIS-NN and CMSIS Core from ../shared/cmsis, unpacked into
a test's temporary folder and named by CMSIS_NN / CMSIS_CORE as a user's own copy would be."""
from __future__ import annotations

import contextlib
import glob
import os
import tarfile

from conftest import ROOT

SHARED = os.path.join(os.path.dirname(ROOT), "shared", "cmsis")
ARCHIVES = sorted(glob.glob(os.path.join(SHARED, "cmsis-nn-*.tar.xz")) +
                  glob.glob(os.path.join(SHARED, "cmsis6-core-*.tar.xz")))
MISSING = f"needs CMSIS-NN and CMSIS Core archives in {SHARED}"


def unpack(folder) -> dict:
    """Unpack both archives under folder/cmsis; the environment variables that name them."""
    for archive in ARCHIVES:
        with tarfile.open(archive) as tar:
            tar.extractall(os.path.join(folder, "cmsis"), filter="data")
    return {"CMSIS_NN": os.path.join(folder, "cmsis", "CMSIS-NN"),
            "CMSIS_CORE": os.path.join(folder, "cmsis", "CMSIS_6", "CMSIS", "Core", "Include")}


@contextlib.contextmanager
def environ(values: dict):
    """os.environ with values set for the block (a module-scoped fixture cannot monkeypatch)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update({k: str(v) for k, v in values.items()})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
