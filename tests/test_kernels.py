"""C99 kernels (kernels/common) must be byte-identical to the NumPy reference.

A small driver written into tmp_path reads the kernel config (int32 fields in struct
order) and the operand arrays from binary files, runs one kernel and writes the int8
result.  Every operand buffer is allocated at its exact size, so the sanitizer build
catches any out-of-bounds access.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT / "site_scons") not in sys.path:
    sys.path.insert(0, str(_ROOT / "site_scons"))
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nnscons import numerics  # noqa: E402
from nnscons import ops  # noqa: E402
from nnscons.reference import run_layer  # noqa: E402
from test_reference import conv_graph, pool_graph, rand_int8, single_layer_graph  # noqa: E402

KERNELS = _ROOT / "kernels" / "common"
CFLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]

DRIVER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn_kernels.h"

static void *load(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    void *p;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        exit(2);
    }
    p = malloc(n > 0 ? (size_t)n : 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(2);
    }
    fclose(f);
    return p;
}

/* driver OP CFG OUT OUT_BYTES INPUT... */
int main(int argc, char **argv)
{
    const int32_t *p;
    const void *in[5] = {0};
    int8_t *out;
    long out_n;
    int i;
    FILE *f;
    if (argc < 6 || argc > 10)
        return 2;
    p = load(argv[2]);
    out_n = atol(argv[4]);
    out = malloc(out_n > 0 ? (size_t)out_n : 1);
    for (i = 5; i < argc; ++i)
        in[i - 5] = load(argv[i]);
    if (!strcmp(argv[1], "conv2d")) {
        nn_conv2d_cfg_t c = {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10],
                             p[11], p[12], p[13], p[14], p[15], p[16], p[17], p[18]};
        nn_conv2d_s8(&c, in[0], in[1], in[2], in[3], in[4], out);
    } else if (!strcmp(argv[1], "linear")) {
        nn_linear_cfg_t c = {p[0], p[1], p[2], p[3], p[4], p[5]};
        nn_linear_s8(&c, in[0], in[1], in[2], in[3], in[4], out);
    } else if (!strcmp(argv[1], "maxpool") || !strcmp(argv[1], "avgpool")) {
        nn_pool_cfg_t c = {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10],
                           p[11], p[12], p[13], p[14], p[15], p[16], p[17]};
        (argv[1][0] == 'm' ? nn_maxpool_s8 : nn_avgpool_s8)(&c, in[0], in[1], in[2], out);
    } else if (!strcmp(argv[1], "global_avgpool")) {
        nn_global_avgpool_s8(p[0], p[1], p[2], p[3], p[4], p[5], in[0], in[1], in[2], out);
    } else if (!strcmp(argv[1], "add")) {
        nn_add_s8(p[0], in[0], p[1], in[1], p[2], in[2], in[3], p[3], p[4], p[5], out);
    } else if (!strcmp(argv[1], "requant")) {
        nn_requant_s8(p[0], in[0], p[1], p[2], p[3], p[4], p[5], p[6], out);
    } else {
        return 2;
    }
    f = fopen(argv[3], "wb");
    if (!f || fwrite(out, 1, (size_t)out_n, f) != (size_t)out_n)
        return 2;
    return fclose(f) != 0;
}
"""


class Driver:
    def __init__(self, exe: Path):
        self.exe = exe
        self.calls = 0

    def run(self, op, cfg, inputs, out_size):
        """int8[out_size] produced by one kernel call."""
        d = self.exe.parent / f"call{self.calls}"
        self.calls += 1
        d.mkdir()
        np.asarray(cfg, dtype=np.int32).tofile(d / "cfg.bin")
        paths = []
        for i, arr in enumerate(inputs):
            paths.append(str(d / f"in{i}.bin"))
            np.ascontiguousarray(arr).tofile(paths[-1])
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        res = subprocess.run([str(self.exe), op, str(d / "cfg.bin"), str(d / "out.bin"), str(out_size)]
                             + paths, capture_output=True, text=True, timeout=120, env=env)
        assert res.returncode == 0, res.stderr
        return np.fromfile(d / "out.bin", dtype=np.int8)


def build_driver(workdir: Path, extra_flags=()) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "driver.c").write_text(DRIVER_C)
    exe = workdir / "driver"
    cmd = (["gcc", *CFLAGS, *extra_flags, f"-I{KERNELS}", str(workdir / "driver.c")]
           + sorted(str(p) for p in KERNELS.glob("*.c")) + ["-o", str(exe), "-lm"])   # LRN, InstanceNormalization
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(res.stderr)
    return exe


pytestmark = pytest.mark.xdist_group("kernels-driver")   # the module's fixture (compiled or built once) on one worker


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    return Driver(build_driver(tmp_path_factory.mktemp("plain")))


@pytest.fixture(scope="module")
def sanitized_driver(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    try:
        drv = Driver(build_driver(tmp_path_factory.mktemp("sanitize"), SANITIZE))
        drv.run("requant", [1, 0, 1 << 30, 30, 0, -128, 127], [np.zeros(1, np.int8)], 1)
    except (RuntimeError, AssertionError) as e:
        pytest.skip(f"sanitizer runtime unavailable: {str(e)[:200]}")
    return drv


# ---------------------------------------------------------------- one C call per IR layer (or tile)

def _band(layer, graph, rows, extra_halo):
    """Input rows [b0, b1) a tile for output rows `rows` needs, and the tile's pad_top."""
    a = layer.attrs
    _, _, h, _ = graph.tensor(layer.inputs[0]).shape
    sh, top = a.get("stride", (1, 1))[0], a.get("pads", (0, 0, 0, 0))[0]
    kh, dh = a["kernel"][0], a.get("dilation", (1, 1))[0]
    r0, r1 = rows
    first, last = r0 * sh - top, (r1 - 1) * sh - top + (kh - 1) * dh
    b0, b1 = max(0, first - extra_halo), min(h, last + 1 + extra_halo)
    return b0, b1, top - r0 * sh + b0


def c_conv(drv, layer, graph, x, rows=None, extra_halo=0):
    a, q_in, q_out = layer.attrs, graph.tensor(layer.inputs[0]).q, graph.tensor(layer.output).q
    _, c, _, w = x.shape
    _, o, oh, ow = graph.tensor(layer.output).shape
    rows = rows or (0, oh)
    b0, b1, pad_top = _band(layer, graph, rows, extra_halo)
    p = ops.requant_params(layer, graph)
    cfg = [c, b1 - b0, w, o, rows[1] - rows[0], ow, *a["kernel"], *a["stride"], *a["dilation"],
           pad_top, a["pads"][1], a["groups"], q_in.zero_point, q_out.zero_point, layer.act_min, layer.act_max]
    out = drv.run("conv2d", cfg, [x[0, :, b0:b1], layer.weight, layer.bias, p["mult"], p["shift"]],
                  o * (rows[1] - rows[0]) * ow)
    return out.reshape(1, o, rows[1] - rows[0], ow)


def c_pool(drv, layer, graph, x, rows=None, extra_halo=0):
    a, q_in, q_out = layer.attrs, graph.tensor(layer.inputs[0]).q, graph.tensor(layer.output).q
    _, c, _, w = x.shape
    _, _, oh, ow = graph.tensor(layer.output).shape
    rows = rows or (0, oh)
    b0, b1, pad_top = _band(layer, graph, rows, extra_halo)
    p = ops.requant_params(layer, graph)
    cfg = [c, b1 - b0, w, rows[1] - rows[0], ow, *a["kernel"], *a["stride"], *a.get("dilation", (1, 1)),
           pad_top, a["pads"][1],
           a.get("count_include_pad", 0), q_in.zero_point, q_out.zero_point, layer.act_min, layer.act_max]
    out = drv.run(layer.op, cfg, [x[0, :, b0:b1], p["mult"], p["shift"]], c * (rows[1] - rows[0]) * ow)
    return out.reshape(1, c, rows[1] - rows[0], ow)


def c_layer(drv, layer, graph, inputs):
    """Full-tensor C result for any layer (concat = one nn_requant_s8 call per input)."""
    q = [graph.tensor(t).q for t in layer.inputs]
    out_t = graph.tensor(layer.output)
    n_out = int(np.prod(out_t.shape))
    p = ops.requant_params(layer, graph)
    clamp = [out_t.q.zero_point, layer.act_min, layer.act_max]
    if layer.op == "conv2d":
        return c_conv(drv, layer, graph, inputs[0])
    if layer.op in ("maxpool", "avgpool"):
        return c_pool(drv, layer, graph, inputs[0])
    if layer.op == "linear":
        o, k = layer.weight.shape
        out = drv.run("linear", [k, o, q[0].zero_point, *clamp],
                      [inputs[0], layer.weight, layer.bias, p["mult"], p["shift"]], o)
    elif layer.op == "global_avgpool":
        _, c, h, w = inputs[0].shape
        out = drv.run("global_avgpool", [c, h * w, q[0].zero_point, *clamp],
                      [inputs[0], p["mult"], p["shift"]], c)
    elif layer.op == "add":
        out = drv.run("add", [n_out, q[0].zero_point, q[1].zero_point, *clamp],
                      [inputs[0], inputs[1], p["mult"], p["shift"]], n_out)
    elif layer.op == "requant":
        out = drv.run("requant", [n_out, q[0].zero_point, p["mult"][0], p["shift"][0], *clamp],
                      inputs, n_out)
    elif layer.op == "concat":
        out = np.concatenate([
            drv.run("requant", [x.size, qi.zero_point, p["mult"][i], p["shift"][i], *clamp], [x], x.size)
            .reshape(x.shape) for i, (x, qi) in enumerate(zip(inputs, q))], axis=1)
    else:
        raise AssertionError(layer.op)
    return out.reshape(out_t.shape)


def assert_same(drv, layer, graph, inputs):
    np.testing.assert_array_equal(c_layer(drv, layer, graph, inputs), run_layer(layer, graph, inputs))


# ---------------------------------------------------------------- cases

CONV_CASES = [
    dict(c=3, h=9, w=8, o=4),
    dict(c=3, h=16, w=15, o=5, k=(7, 7), stride=(2, 2), pads=(3, 3, 3, 3), relu=True),
    dict(c=4, h=10, w=9, o=6, k=(3, 2), stride=(2, 3), pads=(2, 0, 1, 1), groups=2),
    dict(c=6, h=11, w=10, o=6, dil=(2, 3), pads=(2, 3, 2, 3), groups=6),
    dict(c=8, h=9, w=9, o=16, stride=(2, 2), groups=8, relu=True),          # depthwise multiplier 2
    dict(c=5, h=7, w=7, o=7, k=(1, 1), stride=(2, 2), pads=(0, 0, 0, 0), in_zp=-128),
    dict(c=2, h=4, w=4, o=3, k=(5, 5), pads=(3, 1, 0, 2), in_zp=127, out_zp=-128),
    dict(c=2, h=3, w=300, o=2, k=(3, 5), pads=(1, 2, 1, 2)),                  # > one column strip
]


@pytest.mark.parametrize("kw", CONV_CASES, ids=range(len(CONV_CASES)))
def test_conv2d_matches_reference(driver, kw):
    rng = np.random.default_rng(100 + CONV_CASES.index(kw))
    g, layer = conv_graph(rng, **kw)
    if kw.get("relu"):
        layer.act_max = int(rng.integers(layer.act_min + 1, 128))
    assert_same(driver, layer, g, [rand_int8(rng, g.tensor("x").shape)])


@pytest.mark.parametrize("kw", CONV_CASES[:5], ids=range(5))
@pytest.mark.parametrize("extra_halo", [0, 2])
def test_conv2d_row_tiles_match_full_image(driver, kw, extra_halo):
    rng = np.random.default_rng(200 + CONV_CASES.index(kw))
    g, layer = conv_graph(rng, **kw)
    x = rand_int8(rng, g.tensor("x").shape)
    ref = run_layer(layer, g, [x])
    oh = ref.shape[2]
    bands = [(0, 1), (1, min(oh, 3)), (oh // 2, oh), (oh - 1, oh)]
    for rows in bands:
        got = c_conv(driver, layer, g, x, rows, extra_halo)
        np.testing.assert_array_equal(got, ref[:, :, rows[0]:rows[1]], err_msg=str(rows))


POOL_CASES = [
    ("maxpool", dict(k=(3, 3), stride=(2, 2), pads=(1, 1, 1, 1))),
    ("maxpool", dict(k=(2, 3), stride=(2, 1), pads=(0, 1, 1, 0), ceil=True)),
    ("avgpool", dict(k=(3, 3), stride=(2, 2), pads=(1, 1, 1, 1), count_include_pad=1)),
    ("avgpool", dict(k=(3, 3), stride=(1, 2), pads=(1, 1, 1, 1), count_include_pad=0)),
    ("avgpool", dict(k=(2, 2), stride=(2, 2), pads=(0, 0, 0, 0), ceil=True)),
    ("avgpool", dict(k=(3, 3), stride=(2, 2), pads=(2, 1, 0, 2), ceil=True, count_include_pad=0)),
    ("avgpool", dict(k=(4, 2), stride=(1, 2), pads=(0, 1, 3, 0), count_include_pad=1)),
    ("maxpool", dict(k=(3, 2), stride=(1, 2), pads=(2, 1, 1, 2), dilation=(2, 3))),
    ("avgpool", dict(k=(2, 3), stride=(2, 1), pads=(1, 2, 1, 0), dilation=(3, 2), count_include_pad=1)),
    ("avgpool", dict(k=(3, 3), stride=(2, 2), pads=(1, 1, 1, 1), dilation=(2, 2), ceil=True)),
]
# ceil_mode with count_include_pad (ONNX divides by the part of the window inside the pads)
# is in the reference; targets refuse it (base.pool_check) until a kernel implements it.


@pytest.mark.parametrize("op, kw", POOL_CASES, ids=range(len(POOL_CASES)))
def test_pool_matches_reference_full_and_tiled(driver, op, kw):
    rng = np.random.default_rng(300 + len(str(kw)))
    g, layer = pool_graph(rng, op, 3, 11, 10, **kw)
    x = rand_int8(rng, g.tensor("x").shape)
    ref = run_layer(layer, g, [x])
    np.testing.assert_array_equal(c_layer(driver, layer, g, [x]), ref)
    oh = ref.shape[2]
    for rows in [(0, 2), (2, oh - 1), (oh - 1, oh)]:
        np.testing.assert_array_equal(c_pool(driver, layer, g, x, rows), ref[:, :, rows[0]:rows[1]])


@pytest.mark.parametrize("seed", range(3))
def test_linear_matches_reference(driver, seed):
    rng = np.random.default_rng(seed)
    k, o = int(rng.integers(1, 600)), int(rng.integers(1, 40))
    g, layer = single_layer_graph(
        "linear", [("x", (1, k), 0.03, int(rng.integers(-128, 128)))], ("y", (1, o), 0.5, -3),
        weight=rand_int8(rng, (o, k)), weight_scale=rng.uniform(0.001, 0.02, o),
        bias=rng.integers(-3000, 3000, o).astype(np.int32))
    assert_same(driver, layer, g, [rand_int8(rng, (1, k))])


@pytest.mark.parametrize("seed", range(3))
def test_eltwise_and_global_pool_match_reference(driver, seed):
    rng = np.random.default_rng(seed)
    sc = lambda: float(rng.uniform(0.01, 0.1))           # noqa: E731
    zp = lambda: int(rng.integers(-128, 128))            # noqa: E731
    shape = (1, 6, 5, 7)
    g, layer = single_layer_graph("add", [("a", shape, sc(), zp()), ("b", shape, sc(), zp())],
                                  ("y", shape, sc(), zp()))
    layer.act_min = max(-128, g.tensor("y").q.zero_point)
    assert_same(driver, layer, g, [rand_int8(rng, shape), rand_int8(rng, shape)])
    g, layer = single_layer_graph("requant", [("x", shape, sc(), zp())], ("y", shape, sc(), zp()))
    assert_same(driver, layer, g, [rand_int8(rng, shape)])
    g, layer = single_layer_graph("concat", [("a", (1, 2, 3, 3), sc(), zp()), ("b", (1, 4, 3, 3), sc(), zp())],
                                  ("y", (1, 6, 3, 3), sc(), zp()), attrs=dict(axis=1))
    assert_same(driver, layer, g, [rand_int8(rng, (1, 2, 3, 3)), rand_int8(rng, (1, 4, 3, 3))])
    g, layer = single_layer_graph("global_avgpool", [("x", shape, sc(), zp())], ("y", (1, 6, 1, 1), sc(), zp()))
    assert_same(driver, layer, g, [rand_int8(rng, shape)])


def _extreme_layers(rng):
    """Layers whose accumulators reach the documented bounds (K = 4608, |x - zp| = 255)."""
    g, conv = conv_graph(rng, 512, 5, 5, 2, in_zp=127)
    conv.weight[:] = -128
    conv.bias[:] = [2**31 - 1, -2**31]
    yield conv, g, [np.full((1, 512, 5, 5), -128, np.int8)]
    g, pool = pool_graph(rng, "avgpool", 2, 6, 6, (3, 3), (2, 2), (1, 1, 1, 1))
    yield pool, g, [np.full((1, 2, 6, 6), 127, np.int8)]
    g, add = single_layer_graph("add", [("a", (1, 4), 1.0, -128), ("b", (1, 4), 1e-3, 127)],
                                ("y", (1, 4), 1e-3, 0))
    yield add, g, [np.array([[127, -128, 0, 1]], np.int8), np.array([[-128, 127, 5, -5]], np.int8)]


@pytest.mark.parametrize("build", ["plain", "sanitized"])
def test_extreme_accumulators(request, build):
    drv = request.getfixturevalue("driver" if build == "plain" else "sanitized_driver")
    for layer, g, inputs in _extreme_layers(np.random.default_rng(7)):
        assert_same(drv, layer, g, inputs)
    # All conv/pool/tile paths once more under this build.
    rng = np.random.default_rng(8)
    g, layer = conv_graph(rng, **CONV_CASES[2])
    x = rand_int8(rng, g.tensor("x").shape)
    np.testing.assert_array_equal(c_conv(drv, layer, g, x, (1, 3), 1), run_layer(layer, g, [x])[:, :, 1:3])
