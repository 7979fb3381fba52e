"""Layer by layer on GVSoC's GAP9 model (targets/gap9/layerwise.py): a layer too large for L2
alone runs on a slice of its output channels, whole output-channel tiles of its own plan, so
that its cycles scaled by oc / k count whole tiles as the full layer runs them."""
from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons"))

from nnscons import manifest  # noqa: E402
from nnscons.builders.graph import network  # noqa: E402
from nnscons.targets import schemas  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _slices(target, tmp_path):
    man = manifest.load_manifest(os.path.join(ROOT, "targets.yaml"), schemas())
    session = network.plan(man, target, "resnet18", platform="gvsoc-gap9", root=ROOT,
                           build_dir=str(tmp_path / target))
    return {lp.layer.name: (lp.report["slice"]["channels"], lp.report["slice"]["of"], lp.spec["tile"]["tc"],
                            lp.report["engine"]) for lp in session.plan.layers if "slice" in lp.report}


def test_sliced_layers_run_whole_channel_tiles(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for target in ("gap9", "gap9-cluster"):
        slices = _slices(target, tmp_path)
        assert set(slices) == {"layer4.0.conv1", "layer4.0.conv2", "layer4.1.conv1", "layer4.1.conv2"}
        for name, (k, oc, tc, engine) in slices.items():
            assert 0 < k < oc and k % math.lcm(8, tc) == 0, (target, name, k, tc)
        if target == "gap9":
            # NE16's 32-channel tiles: 480 channels (15 tiles), not 504 (15 and one of 24)
            assert slices["layer4.0.conv1"][0] == 480 and slices["layer4.0.conv1"][3] == "ne16"
