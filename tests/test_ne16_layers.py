"""Conv layers on NE16 in the gap9 build (kernels.ne16, targets/gap9/ne16_layer.py) on GVSoC's
GAP9 model: the same network built twice in one project, NE16 on (kernels.ne16: auto, the
default on platform=gvsoc-gap9) and off (a second gap9 target with kernels.ne16: false);
both bit-exact with the integer reference, the report says which engine ran each conv, and
every NE16 conv takes fewer cycles than the cluster on the same layer.
Needs the model and the riscv compiler (test_gap9_model.py says how); skips without them.
"""
from __future__ import annotations

import json

import pytest

from conftest import GAP9_MODEL
from test_gap9_model import needs_model, scons

from nnscons.targets.gap9 import ne16_geometry, ne16_layer


def _add_cluster_only_target(p):
    """A second gap9 target, gap9c, the same but with NE16 off."""
    y = p.read("targets.yaml")
    assert "\n  gap9:\n    kind: gap9\n" in y
    p.write("targets.yaml", y.replace("\n  gap9:\n    kind: gap9\n",
                                      "\n  gap9c:\n    kind: gap9\n    kernels: {ne16: false}\n"
                                      "\n  gap9:\n    kind: gap9\n", 1))


def _report(p, target, model):
    with open(p.file(f"build/{target}/{model}/gvsoc-gap9/report.json")) as f:
        return {lay["name"]: lay for lay in json.load(f)["layers"]}


def _both(p, model, timeout=1500):
    _add_cluster_only_target(p)
    out = {}
    for target in ("gap9", "gap9c"):
        proc = scons(p, f"target={target}", f"model={model}", "platform=gvsoc-gap9", timeout=timeout)
        assert proc.returncode == 0, proc.stdout[-4000:]
        assert f"Test PASSED [{target}] {model}" in proc.stdout, proc.stdout[-3000:]
        out[target] = (_report(p, target, model), proc.stdout)
    return out


def _check_faster(ne, cl):
    on = [n for n, lay in ne.items() if lay.get("engine") == "ne16"]
    assert on, "no layer ran on NE16"
    assert all(cl[n]["engine"] == "cluster" for n in on)
    lines = []
    for n in on:
        c_ne, c_cl = ne[n]["cycles"], cl[n]["cycles"]     # scaled when run on a slice
        lines.append(f"{n}: NE16 {c_ne:,} cycles, cluster {c_cl:,} ({c_cl / c_ne:.1f}x)")
        assert c_ne < c_cl, lines[-1]
    print("\n".join(lines))
    return on


@needs_model
def test_simplecnn_convs_on_ne16_bit_exact_and_faster_than_the_cluster(project):
    r = _both(project, "simplecnn")
    ne, cl = r["gap9"][0], r["gap9c"][0]
    on = _check_faster(ne, cl)
    assert "conv2" in on                        # 8 -> 16 channels, 3x3, stride 1
    assert all(lay["engine"] != "ne16" for lay in ne.values() if lay["op"] != "conv2d")
    assert " engine " in r["gap9"][1] and " ne16 " in r["gap9"][1]
    src = project.read("build/gap9/simplecnn/src/layers/conv2.c")
    assert "nn_ne16_trigger(&job)" in src


@needs_model
@pytest.mark.slow
def test_ic_resnet8_convs_on_ne16_bit_exact_and_faster_than_the_cluster(project):
    r = _both(project, "ic_resnet8", timeout=2400)
    on = _check_faster(r["gap9"][0], r["gap9c"][0])
    assert len(on) >= 5


def _wide_conv_onnx(path):
    """Float ONNX: 3x3 conv 512 -> 48 channels at 5x5 (its 221 KiB of NE16 weights crowd L1:
    input-channel groups), ReLU."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((48, 512, 3, 3)) / np.sqrt(512 * 9)).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(48) * 0.1).astype(np.float32), "b")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"], "relu")], "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 48, 5, 5])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


@needs_model
@pytest.mark.slow
def test_input_channel_groups_bit_exact_and_faster_than_the_cluster(project):
    """A conv whose weights crowd L1 runs in input-channel groups (NE16's streamin carries the
    32-bit sums from one group's job to the next): 4 groups of 128, a 32- and a 16-channel
    tile; bit-exact, and faster than the cluster on the same layer."""
    import glob
    _wide_conv_onnx(project.file("wide.onnx"))
    _add_cluster_only_target(project)
    rep = {}
    for target in ("gap9", "gap9c"):
        proc = scons(project, f"target={target}", "model=wide.onnx", "platform=gvsoc-gap9", timeout=1200)
        assert proc.returncode == 0 and f"Test PASSED [{target}]" in proc.stdout, proc.stdout[-4000:]
        path, = glob.glob(project.file(f"build/{target}/*/gvsoc-gap9/report.json"))
        with open(path) as f:
            rep[target] = json.load(f)["layers"][0]
    ne, cl = rep["gap9"], rep["gap9c"]
    assert ne["engine"] == "ne16" and cl["engine"] == "cluster"
    assert ne["engine_why"].startswith("estimate NE16 ") and ne["ne16_estimate"] < ne["cluster_estimate"]
    src, = glob.glob(project.file("build/gap9/*/src/layers/conv.c"))
    with open(src) as f:
        code = f.read()
    assert "#define NG 4" in code and "#define KG 128" in code and ".streamin = grp > 0" in code
    print(f"\n512->48 5x5: NE16 {ne['cycles']:,} cycles, cluster {cl['cycles']:,} ({cl['cycles'] / ne['cycles']:.1f}x)")
    assert ne["cycles"] < cl["cycles"]


def _strided_onnx(path, convs, shape, seed=1):
    """Float ONNX: a chain of convs (out channels, kernel, stride, pads [t, l, b, r]), each with
    a ReLU, on an input of shape (C, H, W)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits, c, (ch, h, w) = [], [], "x", shape
    for n, (oc, k, s, pads) in enumerate(convs):
        inits += [numpy_helper.from_array((rng.standard_normal((oc, ch, k, k)) / np.sqrt(ch * k * k))
                                          .astype(np.float32), f"w{n}"),
                  numpy_helper.from_array((rng.standard_normal(oc) * 0.1).astype(np.float32), f"b{n}")]
        nodes += [helper.make_node("Conv", [c, f"w{n}", f"b{n}"], [f"c{n}"], f"conv{n}", pads=list(pads),
                                   strides=[s, s]),
                  helper.make_node("Relu", [f"c{n}"], [f"r{n}"], f"relu{n}")]
        c, ch = f"r{n}", oc
        h, w = (h + pads[0] + pads[2] - k) // s + 1, (w + pads[1] + pads[3] - k) // s + 1
    g = helper.make_graph(nodes, "strided", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, *shape])],
                          [helper.make_tensor_value_info(c, TensorProto.FLOAT, [1, ch, h, w])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


# stride-2 job forms ("rows" mode): the stem's 7x7/2 on 3 channels (stacked rows: one job of
# 147 channels), 1x1/2 (the ResNet downsample, one job) on an even input (the padded tile is
# narrower than the input: its last column unread), 3x3/2 pads 1 on an odd input (3 jobs),
# 3x3/2 with SAME-style pads (0, 0, 1, 1) on an even input (the bottom/right pad read)
STRIDED = ([(32, 7, 2, (3, 3, 3, 3)), (48, 1, 2, (0, 0, 0, 0)), (64, 3, 2, (1, 1, 1, 1)),
            (64, 3, 2, (0, 0, 1, 1))], (3, 60, 60))


@needs_model
@pytest.mark.slow
def test_stride_2_on_ne16_bit_exact_and_faster_than_the_cluster(project):
    """Stride-2 convs on NE16 in rows mode (one 1x1 job per kernel row, strided by NE16's input
    strides, summed through streamin): every form of STRIDED bit-exact on NE16. The 1x1/2 form
    (32 input channels) runs faster on the cluster's pointwise path, so the estimate keeps it
    there: the layer's `on: ne16` key puts it on NE16 (the other three are there by the
    estimate and faster than the cluster on the same layer)."""
    import glob
    _strided_onnx(project.file("strided.onnx"), *STRIDED)
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("\nmodels:\n", "\nmodels:\n  strided:\n    source: strided.onnx\n"
                                            "    targets:\n      gap9:\n        layers:\n          conv1: {on: ne16}\n", 1))
    both = _both(project, "strided", timeout=900)
    ne, cl = both["gap9"][0], both["gap9c"][0]
    convs = [n for n, lay in ne.items() if lay["op"] == "conv2d"]
    assert len(convs) == len(STRIDED[0])
    assert [n for n in convs if ne[n]["engine"] != "ne16"] == [], {n: ne[n].get("engine_why") for n in convs}
    assert ne["conv1"]["engine_why"].startswith("on: ne16 (targets.yaml); estimate NE16 "), ne["conv1"]
    _check_faster({n: lay for n, lay in ne.items() if n != "conv1"}, cl)
    src = project.read(glob.glob(project.file("build/gap9/*/src/layers/conv0.c"))[0][len(project.path) + 1:])
    assert "#define S 2\n" in src and "#define JOBS 1 " in src and "stack_worker(void" in src
    src = project.read(glob.glob(project.file("build/gap9/*/src/layers/conv2.c"))[0][len(project.path) + 1:])
    assert "#define JOBS 3 " in src and ".streamin = dy > 0" in src


def _one_strided_conv_on_both(project, name, conv, in_shape):
    """A one-conv model (relu -> conv -> relu) built for NE16 and for the cluster on the GAP9
    model: its conv on NE16, bit-exact (the builds check it) and faster than the cluster; the
    NE16 layers' report and conv0's generated source."""
    import glob
    _strided_onnx(project.file(f"{name}.onnx"), [conv], in_shape)
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("\nmodels:\n", f"\nmodels:\n  {name}:\n    source: {name}.onnx\n", 1))
    both = _both(project, name, timeout=900)
    ne, cl = both["gap9"][0], both["gap9c"][0]
    assert ne["conv0"]["engine"] == "ne16", ne["conv0"].get("engine_why")
    _check_faster(ne, cl)
    src = project.read(glob.glob(project.file("build/gap9/*/src/layers/conv0.c"))[0][len(project.path) + 1:])
    return ne, src


@needs_model
def test_dense_kernel_rows_bit_exact_and_faster_than_the_cluster(project):
    """A 3x3/2 conv on dense kernel-row buffers (ne16_geometry.dense_rows: each output pixel's
    window row gathered by the DMA, every 3x3 subtile of NE16 full): 96->128 at 25x25, tiles of 2
    of its 13 output rows and a short last one, padding on every side (the right and bottom pads
    inside the last column's and row's windows), channel tiles inner; bit-exact and faster than
    the cluster on the same layer."""
    ne, src = _one_strided_conv_on_both(project, "drows", (128, 3, 2, (1, 1, 1, 1)), (96, 25, 25))
    assert "prep_dr_worker(void" in src and "#define JOBS 3 " in src and ".streamin = dy > 0" in src


@needs_model
def test_tap_jobs_bit_exact_and_faster_than_the_cluster(project):
    """A 3x3/2 conv on tap jobs (ne16_geometry.taps: the whole map's dense kernel-row buffers in
    L1, per kernel row a 1x1 job over tap dx 2 and one over taps dx 0 and 1, their weights streamed
    per job, a pair's over the accumulator buffer not in use): 128->200 at 14x14 with SAME-style
    pads (0, 0, 1, 1) (the bottom and right pads inside the last windows), channel tiles of 96 and
    a short last one of 8; the input prepared in pieces beside NE16. Bit-exact and faster than the
    cluster on the same layer."""
    ne, src = _one_strided_conv_on_both(project, "taps", (200, 3, 2, (0, 0, 1, 1)), (128, 14, 14))
    assert ne["conv0"]["tile"]["taps"] and ne["conv0"]["tile"]["tc"] == 96, ne["conv0"]["tile"]
    assert "tap_job(nn_ne16_job_t *job, int n" in src and "TAP_FIRST[TJOBS] = { 1, 1, 0, 0, 1, 1 }" in src
    assert "TAP_NT[TJOBS] = { 1, 2, 1, 2, 1, 2 }" in src


def test_tap_tiles_weights_one_run_per_job_and_slices_a_prefix():
    """ne16_layer.tap_tiles (a tap-job layer's weight section): job (channel tile co, dy, dx, taps
    nt; ne16_geometry.tap_jobs) reads chans x nt IC bytes at co tc w_row + (dy KW + dx) chans IC,
    the "rows" layout's bytes dy w_job + dx IC .. + nt IC of each of its channels' rows; the first
    k channels (k a multiple of tc, layerwise.slice_layout's prefix) are the k-channel layer's own
    tap tiles, and a short last tile is laid out at its own width."""
    import numpy as np
    rng = np.random.default_rng(5)
    oc, ic, kh, kw, tc = 72, 32, 3, 3, 32
    w = rng.integers(-128, 128, (oc, ic, kh, kw)).astype(np.int8)
    rows = np.frombuffer(ne16_layer.weight_bytes(w, "rows"), np.uint8).reshape(oc, kh * kw * ic)
    tiles = np.frombuffer(ne16_layer.tap_tiles(rows.tobytes(), oc, kh, kw, ic, tc), np.uint8)
    assert tiles.size == rows.size
    for c0 in range(0, oc, tc):
        chans = min(tc, oc - c0)
        for dy, dx, nt in ne16_geometry.tap_jobs(kh, 2):
            at = c0 * kh * kw * ic + (dy * kw + dx) * chans * ic
            job = tiles[at:at + chans * nt * ic].reshape(chans, nt * ic)
            assert (job == rows[c0:c0 + chans, (dy * kw + dx) * ic:(dy * kw + dx + nt) * ic]).all(), (c0, dy, dx)
    k = 64
    sliced = ne16_layer.tap_tiles(np.frombuffer(ne16_layer.weight_bytes(w[:k], "rows"), np.uint8).tobytes(),
                                  k, kh, kw, ic, tc)
    assert sliced == tiles[:k * kh * kw * ic].tobytes()


def test_short_rule_shifts_only_where_exact():
    """ne16_layer.short_rule_shifts (the WEIGHTS node's nn_xp_rq_short_ok per channel, read by the
    dense 1x1/S template as shift < 0): where it says k, ((s mult) >> 32 + 2^(k-1) + zp 2^k) >> k
    equals the exact rule (s mult / 2^shift rounded half to even, + zp) for every sampled
    s = bias + acc, |acc| <= span, the ends included; shifts outside 33..55 and biases too large
    to prove keep their shift."""
    import numpy as np
    rng = np.random.default_rng(3)
    span, zp = 64 << 15, -128
    bias = rng.integers(-1 << 20, 1 << 20, 64).astype(np.int64)
    mult = rng.integers(1 << 30, (1 << 31) - 1, 64).astype(np.int64)
    shift = rng.integers(36, 45, 64).astype(np.int64)
    bias[0], shift[1], shift[2], mult[3] = 1 << 30, 32, 56, 1 << 30      # unprovable or out of range
    got = ne16_layer.short_rule_shifts(bias, mult, shift, zp, span)
    assert list(got[:4]) == [shift[0], 32, 56, shift[3]]
    assert (got[4:] < 0).all()
    for c in np.flatnonzero(got < 0):
        k, b, m, sh = -int(got[c]), int(bias[c]), int(mult[c]), int(shift[c])
        assert k == sh - 32
        for a in [b - span, b + span, b] + [b + int(d) for d in rng.integers(-span, span, 2000)]:
            v = a * m
            q, r = divmod(v, 1 << sh)             # floor
            half = 1 << (sh - 1)
            exact = q + (r > half or (r == half and q & 1)) + zp
            short = (((v >> 32) + (1 << (k - 1)) + (zp << k)) >> k)
            assert short == exact, (c, a)


@needs_model
def test_dense_downsample_tiles_bit_exact_and_faster_than_the_cluster(project):
    """A 1x1/2 conv on dense tiles (ne16_geometry.dense): 64->128 at 44x44, tiles of 6 of its 22
    output rows and a short last one x 64 channels, channel tiles inner, two input buffers: the
    job's pointers moved between tiles of one shape and rebuilt for the short one, the even
    requantization split, the WEIGHTS' build-time short-rule check; bit-exact and faster than
    the cluster on the same layer."""
    import glob
    _strided_onnx(project.file("dsd.onnx"), [(128, 1, 2, (0, 0, 0, 0))], (64, 44, 44))
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("\nmodels:\n", "\nmodels:\n  dsd:\n    source: dsd.onnx\n", 1))
    both = _both(project, "dsd", timeout=900)
    ne, cl = both["gap9"][0], both["gap9c"][0]
    assert ne["conv0"]["engine"] == "ne16", ne["conv0"].get("engine_why")
    _check_faster(ne, cl)
    src = project.read(glob.glob(project.file("build/gap9/*/src/layers/conv0.c"))[0][len(project.path) + 1:])
    assert "prep_dense_worker(void" in src and "feed_q.key" in src and "if (shift < 0)" in src


@needs_model
def test_channel_tiles_outer_bit_exact_and_faster_than_the_cluster(project):
    """A 3x3/2 conv in rows mode with channel tiles outer and two input buffers (128->64 at 18x18:
    3 row tiles x 2 channel tiles of 32): at the channel-tile change the next input is loaded
    and prepared while NE16 finishes the tile before, the weights come once it is done, and the
    tile before is requantized beside NE16 with its own bias/mult/shift (the new ones after);
    bit-exact and faster than the cluster on the same layer."""
    import glob
    _strided_onnx(project.file("couter.onnx"), [(64, 3, 2, (1, 1, 1, 1))], (128, 18, 18))
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("\nmodels:\n", "\nmodels:\n  couter:\n    source: couter.onnx\n", 1))
    both = _both(project, "couter", timeout=900)
    ne, cl = both["gap9"][0], both["gap9c"][0]
    assert ne["conv0"]["engine"] == "ne16", ne["conv0"].get("engine_why")
    _check_faster(ne, cl)
    src = project.read(glob.glob(project.file("build/gap9/*/src/layers/conv0.c"))[0][len(project.path) + 1:])
    assert "const int new_ct = " in src and "in_b[2] = { in0, in1 }" in src, src[:600]


def _layer_on(project, target, layer, on):
    old = "    targets:\n      host:\n        layers:\n          conv1: {l1_budget: 8KiB}\n"
    y = project.read("targets.yaml")
    assert old in y
    project.write("targets.yaml", y.replace(old, old + f"      {target}:\n        layers:\n          {layer}: {{on: {on}}}\n", 1))


@pytest.mark.parametrize("target,layer,on,expect", [
    ("gap9", "conv1", "ne16", "conv1.on: ne16, but NE16 is off for this build"),       # emul: no NE16
    ("pulp-open", "conv1", "ne16", "unknown key"),                                # no NE16 on pulp-open
    ("gap9", "conv1", "gpu", "expected one of"),
])
def test_a_layers_on_key_is_checked(project, target, layer, on, expect):
    """targets.yaml's per-layer `on: ne16 | cluster` (gap9): a value NE16 cannot honour is one
    line naming the layer's key and what to do, never a traceback."""
    _layer_on(project, target, layer, on)
    proc = project.scons(f"target={target}", "model=simplecnn", "platform=emul", "codegen", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out and expect in out, out[-2000:]
    assert "targets.yaml:" in out and "conv1" in out, out[-2000:]


@needs_model
def test_a_layers_on_key_overrides_the_estimate(project):
    """on: cluster keeps an NE16 conv on the cluster (simplecnn's conv2 goes to NE16 by the
    estimate), bit-exact, and the report says why (on: ne16: the stride-2 test above)."""
    _layer_on(project, "gap9", "conv2", "cluster")
    proc = scons(project, "target=gap9", "model=simplecnn", "platform=gvsoc-gap9", timeout=600)
    assert proc.returncode == 0 and "Test PASSED [gap9]" in proc.stdout, proc.stdout[-3000:]
    rep = _report(project, "gap9", "simplecnn")
    assert rep["conv2"]["engine"] == "cluster" and rep["conv2"]["engine_why"] == "on: cluster (targets.yaml)", rep["conv2"]


def test_ne16_only_on_the_gap9_model(project):
    """kernels.ne16: true elsewhere is one clear error; auto is off there (no NE16 in the emulation)."""
    y = project.read("targets.yaml").replace("\n  gap9:\n    kind: gap9\n",
                                             "\n  gap9:\n    kind: gap9\n    kernels: {ne16: true}\n", 1)
    project.write("targets.yaml", y)
    proc = project.scons("target=gap9", "model=simplecnn", "platform=emul", "firmware", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr
    assert "kernels.ne16 = true needs platform=gvsoc-gap9" in proc.stdout + proc.stderr


def test_eligibility_and_bias_fold():
    """Which convs NE16 takes, and that the folded bias makes NE16's unsigned sum equal the
    signed one: sum(u * w) + bias' == sum((x - zp) * w) + bias with u = x + 128."""
    import numpy as np

    class Q:
        def __init__(self, zp):
            self.zero_point = zp

    class T:
        def __init__(self, shape, zp=0):
            self.shape, self.q = shape, Q(zp)

    class G:
        def __init__(self, zp):
            self.t = {"x": T((1, 20, 6, 7), zp), "y": T((1, 40, 6, 7), 3)}

        def tensor(self, n):
            return self.t[n]

    class L:
        op, inputs, output, act_min, act_max = "conv2d", ["x"], "y", -128, 127

        def __init__(self, k=3, stride=1, groups=1):
            rng = np.random.default_rng(0)
            self.weight = rng.integers(-128, 128, (40, 20 // groups, k, k)).astype(np.int8)
            self.bias = rng.integers(-1000, 1000, 40).astype(np.int32)
            self.attrs = {"kernel": (k, k), "stride": (stride, stride), "pads": (k // 2,) * 4, "groups": groups}

    g = G(-5)
    assert ne16_layer.mode(L(3), g) == "3x3"
    assert ne16_layer.mode(L(3, stride=2), g) == "rows"      # a 1x1 job per kernel row, strided
    assert ne16_layer.mode(L(1, stride=2), g) == "rows"
    assert ne16_layer.mode(L(3, stride=3), g) is None
    assert ne16_layer.mode(L(3, groups=4), g) is None
    assert ne16_layer.mode(L(5), g) is None
    lay = L(3)
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (20, 3, 3)).astype(np.int64)
    w = lay.weight[0].astype(np.int64)
    want = ((x + 5) * w).sum() + lay.bias[0]
    got = ((x + 128) * w).sum() + ne16_layer.fold_bias(lay, g)[0]
    assert got == want


def test_ne16_tiles_for_resnet18_shapes():
    """ResNet-18's shapes in the default 112 KiB budget: NE16 tiles of whole rows, a multiple of 3
    rows, 32 output channels or more; 512x7x7 3x3 (its weights crowd L1) with its input channels
    split into groups: all 7 rows, 32 output channels per tile, weights of one group per buffer."""
    import numpy as np

    class Q:
        zero_point = -128

    class T:
        def __init__(self, shape):
            self.shape, self.q = shape, Q()

    def plan(c, h, oc, k):
        class G:
            t = {"x": T((1, c, h, h)), "y": T((1, oc, h, h))}

            def tensor(self, n):
                return self.t[n]

        class L:
            op, inputs, output, bias = "conv2d", ["x"], "y", None
            weight = np.zeros((oc, c, k, k), np.int8)
            attrs = {"kernel": (k, k), "stride": (1, 1), "pads": (k // 2,) * 4}
        return ne16_layer.plan_tiling(L(), G(), "3x3" if k == 3 else "1x1", 112 * 1024)

    for c, h in ((64, 56), (128, 28), (256, 14)):
        t = plan(c, h, c, 3)
        assert t["th"] % 3 == 0 and t["tc"] >= 32 and t["l1_bytes"] <= 112 * 1024, (c, t)
    assert plan(64, 56, 64, 3)["in_bufs"] == 2
    assert plan(64, 56, 64, 3)["n_g"] == 1
    t = plan(512, 7, 512, 3)
    assert t["tc"] == 32 and t["th"] == 7 and t["resident"] and t["l1_bytes"] <= 112 * 1024, t
    assert t["n_g"] == 6 and t["kg"] == 96 and t["kg"] % 16 == 0
    assert t["w_grp"] * (t["n_g"] - 1) + t["w_last"] == 512 // 16 * 8 * 9 * 2   # one channel's NE16 bytes
    assert ne16_layer._group_sizes(512)[:4] == [256, 176, 128, 112]
    assert ne16_layer._group_sizes(40) == [32, 16]


def test_rows_mode_jobs_weights_and_tiles():
    """Stride-2 convs in rows mode: the weights NE16 reads per kernel-row job (a 1x1 weight over
    (dx, ic), or over (dx, dy, ic) when the rows are stacked under 16 input channels) hold the
    conv's own taps in that order; ResNet-18's stride-2 shapes get tiles of a multiple of 3 rows
    (3x3/2), double-buffered or with channel tiles inner, and the stem one stacked job per tile."""
    import numpy as np
    from nnscons.targets.gap9 import ne16_geometry, ne16_weights

    class Q:
        zero_point = -128

    class T:
        def __init__(self, shape):
            self.shape, self.q = shape, Q()

    def layer(c, h, oc, k, p, rng=None):
        oh = (h + 2 * p - k) // 2 + 1

        class G:
            t = {"x": T((1, c, h, h)), "y": T((1, oc, oh, oh))}

            def tensor(self, n):
                return self.t[n]

        class L:
            op, inputs, output, bias = "conv2d", ["x"], "y", None
            weight = (rng.integers(-128, 128, (oc, c, k, k)) if rng is not None else np.zeros((oc, c, k, k))).astype(np.int8)
            attrs = {"kernel": (k, k), "stride": (2, 2), "pads": (p,) * 4}
        return L(), G()

    rng = np.random.default_rng(3)
    for c, k, stack in ((20, 3, False), (3, 7, True)):
        lay, g = layer(c, 15, 40, k, k // 2, rng)
        assert ne16_layer.mode(lay, g) == "rows" and ne16_geometry.stacked("rows", c) == stack
        n_jobs, k_job = ne16_geometry.jobs("rows", k, k, c)
        assert (n_jobs, k_job) == ((1, k * k * c) if stack else (k, k * c))
        blob = ne16_layer.weight_bytes(lay.weight, "rows")
        row = ne16_geometry.weight_row(lay, "rows")
        w = lay.weight.astype(np.int64)       # OIHW
        for o in (0, 39):
            for j in range(n_jobs):
                want = w[o].transpose(2, 1, 0).reshape(-1) if stack else w[o, :, j, :].T.reshape(-1)
                got = ne16_weights.pack(want.reshape(1, 1, 1, -1), "1x1")
                start = o * row + j * (row // n_jobs)
                assert blob[start:start + row // n_jobs] == got, (c, o, j)
    for c, h, oc, k, p in ((16, 32, 32, 3, 1), (32, 16, 64, 3, 1)):
        # ic_resnet8's 3x3/2 shapes: 1.2x / 1.12x slower on dense kernel rows (core 0's DMA commands)
        assert not ne16_layer.plan_tiling(*layer(c, h, oc, k, p), "rows", 112 * 1024).get("dr"), (c, h)
    for oc in (504, 512):
        # 256->512 (and its 504-ch slice): tap jobs on the whole 7x7 map, 6 full subtiles a job
        # (1 row tiles of kernel-row jobs took 7, in 16-channel steps; 2,136,091 -> 1,022,693 cycles)
        t = ne16_layer.plan_tiling(*layer(256, 14, oc, 3, 1), "rows", 112 * 1024)
        assert t["taps"] and t["dr"] and t["th"] == 7 and t["tc"] == 32 and t["l1_bytes"] <= 112 * 1024, t
    for c, h, oc, k, p in ((64, 56, 128, 3, 1), (128, 28, 256, 3, 1), (64, 56, 128, 1, 0), (3, 224, 64, 7, 3)):
        lay, g = layer(c, h, oc, k, p)
        t = ne16_layer.plan_tiling(lay, g, "rows", 112 * 1024)
        assert t and t["l1_bytes"] <= 112 * 1024 and t["n_g"] == 1, (c, t)
        if k == 3:
            # two input buffers, or channel tiles inner (each row tile's input loaded once); a
            # multiple of 3 rows unless on dense kernel-row buffers (64->128 56->28: 2 rows, 7
            # full 3x3 subtiles where 2 x 28 outputs took 10)
            assert (t["th"] % 3 == 0 or t["dr"]) and (t["in_bufs"] == 2 or t["c_inner"]) and t["tc"] >= 32, (c, t)
        # dense kernel-row tiles (ne16_geometry.dense_rows) where measured faster: 64->128 56->28
        # (1,251,653 -> 1,164,966 cycles); 128->256's that would gain do not fit L1
        assert t.get("dr") == (c == 64 and k == 3), (c, t)
        if k == 7:      # the stem: channel tiles inner, its stacked input prepared once per row tile
            assert t["c_inner"] and t["n_c"] > 1 and t["l1_w"] == t["n_c"] * t["w_ctile"], t


def test_cost_choice_on_measured_shapes():
    """ne16_cost's choice on shapes measured on both engines (its docstring): ResNet-18's
    512x7x7 3x3, its stride-2 3x3 convs and stem, and ic_resnet8's 16-channel 3x3 go to NE16, the zoo MobileNetV2's 48->8 12x12
    1x1 projection (22.1k cycles on NE16, 10.2k on the cluster) stays on the cluster; the
    reason names both estimates."""
    import numpy as np
    from nnscons.targets.gap9 import ne16_cost, ops

    class Q:
        zero_point, scale = -128, 0.05

    class T:
        def __init__(self, shape):
            self.shape, self.q = shape, Q()

    def choose(c, h, oc, k, s=1, zp=-128, w=None):
        w = w or h
        oh, ow = ((n + 2 * (k // 2) - k) // s + 1 for n in (h, w))

        class Qz(Q):
            zero_point = zp

        class G:
            t = {"x": T((1, c, h, w)), "y": T((1, oc, oh, ow))}
            t["x"].q = Qz()

            def tensor(self, n):
                return self.t[n]

        class L:
            op, inputs, output, bias, name, act_min, act_max, fused = "conv2d", ["x"], "y", None, "l", -128, 127, []
            weight = np.ones((oc, c, k, k), np.int8)
            attrs = {"kernel": (k, k), "stride": (s, s), "pads": (k // 2,) * 4, "dilation": (1, 1), "groups": 1}
        layer, graph = L(), G()
        m = ne16_layer.mode(layer, graph)
        til, _ = ops.plan_tiling(layer, graph, 112 * 1024, 9, True)
        return ne16_cost.choose(layer, graph, m, ne16_layer.plan_tiling(layer, graph, m, 112 * 1024), til, 9, True)

    on, why = choose(512, 7, 512, 3)
    assert on and why["ne16_estimate"] * 3 < why["cluster_estimate"], why
    assert choose(16, 32, 16, 3)[0]
    on, why = choose(48, 12, 8, 1, zp=0)      # the zoo model's zero point: the cluster's pointwise path
    assert not on and why["why"].startswith("estimate NE16 ") and " >= cluster " in why["why"], why
    # stride 2 in rows mode (README: measured alone with ResNet-18's shapes 1,340,157 /
    # 1,426,227 cycles, the stem with its channel tiles inner 3,944,692): NE16, its estimate
    # within 20% of those
    for (c, h, oc, k), measured in (((64, 56, 128, 3), 1340157), ((128, 28, 256, 3), 1426227),
                                    ((3, 224, 64, 7), 3944692)):
        on, why = choose(c, h, oc, k, 2)
        assert on and abs(why["ne16_estimate"] / measured - 1) < 0.2, (c, why)
    # 1x1 convs with zero point 0 run on the cluster's pointwise path, estimated by its own fit
    # (MobileNetV2 on the GAP9 model: 8->48 48x48 262,049 cycles on the cluster, 408,361 on
    # NE16; 48->8 24x24 29,270 and 39,152; 336->112 3x3 35,388 and 24,118): within 25% of the
    # cluster's measured cycles, and the faster engine chosen
    for (c, h, oc), measured, ne16 in (((8, 48, 48), 262049, False), ((48, 24, 8), 29270, False),
                                       ((336, 3, 112), 35388, True)):
        on, why = choose(c, h, oc, 1, zp=0)
        assert on == ne16 and abs(why["cluster_estimate"] / measured - 1) < 0.25, (c, why)
    # under 8 tiles NE16's estimate plays the template's loop (NE16 beside the requantization,
    # the cores on (channel, pixel chunk) units of the short rule's loop), measured on the GAP9
    # model with every eligible conv forced on NE16 (benchmarks/gap9_cycles.py, ne16_cost's
    # docstring): kws_dscnn's 64->64 25x5 pointwise convs (30,351 cycles on NE16, 54,512 on the
    # cluster), vww_mobilenetv1's 256->256 3x3 (one tile: 27,557 and 56,282), MobileNetV2's
    # 32->192 and 8->48 expansions (22,469 / 35,915 and 62,391 / 69,162: the estimate before,
    # 26 cycles per output, said 2.2x and 1.75x of NE16's cycles and kept them on the
    # cluster) and its 48->8 24x24 projection (33,567 and 29,514): within 10% of NE16's
    # measured cycles, the faster engine chosen
    for (c, h, w, oc), measured, ne16 in (((64, 25, 5, 64), 30351, True), ((256, 3, 3, 256), 27557, True),
                                          ((32, 6, 6, 192), 22469, True), ((8, 24, 24, 48), 62391, True),
                                          ((48, 24, 24, 8), 33567, False)):
        on, why = choose(c, h, oc, 1, zp=0, w=w)
        assert on == ne16 and abs(why["ne16_estimate"] / measured - 1) < 0.1, (c, why)
    # 8+ tiles: the pipelined form with the same requantization (mobilenetv1's 48->96 56x56
    # pointwise conv: 1,012,291 cycles on NE16, 1,325,828 on the cluster, kept on the cluster
    # by the older 41 cycles per output; ResNet-18's 64-channel 56x56 3x3: 1,164,782 measured)
    on, why = choose(48, 56, 96, 1, zp=0)
    assert on and abs(why["ne16_estimate"] / 1012291 - 1) < 0.15, why
    on, why = choose(64, 56, 64, 3)
    assert on and abs(why["ne16_estimate"] / 1164782 - 1) < 0.1, why
