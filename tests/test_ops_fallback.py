"""aie2p's host fallback (targets/aie2p/host_layers.py) runs the new ops through the common
C kernels (ctypes), bit-exact with the reference, on HWC bytes as the runner passes them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "site_scons"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import opsgen  # noqa: E402
from nnscons.frontends import load_model  # noqa: E402
from nnscons.reference import quantize_input, run_graph  # noqa: E402
from nnscons.targets import base  # noqa: E402
from nnscons.targets.aie2p import host_layer  # noqa: E402
from nnscons.targets.aie2p.host_layers import HostKernels  # noqa: E402
from nnscons.targets.aie2p.nodes import HOST_KERNELS  # noqa: E402


pytestmark = pytest.mark.xdist_group("ops-fallback-kernels")   # the module's fixture (compiled or built once) on one worker


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    cc = shutil.which("gcc") or pytest.skip("no gcc")
    so = str(tmp_path_factory.mktemp("host") / "nn_host.so")
    subprocess.run([cc, "-std=c99", "-O1", "-shared", "-fPIC", f"-I{REPO}/kernels/common", "-o", so]
                   + HOST_KERNELS, check=True)
    return HostKernels(so)


def _hwc(spec_t, a):
    return base.to_layout(a, "hwc" if spec_t["hwc"] else "chw").view(np.uint8)


def check_host_fallback(kernels, path):
    """Every layer of the model at `path` through aie2p's host fallback (kernels/common,
    host_layers.HostKernels) equals the reference on a seeded input, bit for bit."""
    g = load_model(path, name="m")
    x = np.random.default_rng(0).standard_normal(g.tensor(g.input).shape).astype(np.float32)
    values = run_graph(g, quantize_input(g, x))
    for layer in g.layers:
        if base.ops.get(layer.op).alias:
            continue
        lp = host_layer(layer, g, "L", "test")
        spec = lp.spec
        params = np.frombuffer(lp.packed_params(g), dtype=np.uint8)
        xs = [_hwc(t, values[n]) for t, n in zip(spec["inputs"], layer.inputs)]
        got = kernels.run(spec, params, xs)
        np.testing.assert_array_equal(got, _hwc(spec["out"], values[layer.output]), err_msg=layer.name)


@pytest.mark.parametrize("gen", ["lut_net", "se_net", "shuffle_net", "classifier_tail"])
def test_new_ops_on_the_host_fallback(tmp_path, kernels, gen):
    check_host_fallback(kernels, getattr(opsgen, gen)(tmp_path / f"{gen}.onnx"))
