"""Several inputs and outputs (issue 23, part 3): a two-input (image + auxiliary map),
three-output graph (box head, score head, and a fused feature map that later layers also
read) imports, equals the float64 QDQ evaluation tensor by tensor, builds on the host with
`input=` as an .npz keyed by input name and `output.npz` keyed by output name, and its C API
(packed buffers, per-tensor macros, run-time descriptors, run_float) gives the harness's
bytes; gap9 runs it on emul, qemu and gvsoc-gap9, pulp-open on gvsoc-open (each tensor its own slot in the
arena, also with the activations in L3), and layer by layer on gvsoc-open; k210 (emul, qemu)
and aie2p (emul) like the host, byte for byte; cortex-m on qemu (M55, M4) with CMSIS-NN (the
reference with TFLite's rounding on its layers) and with onnx-exact (the host's bytes)."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import adhoc
from nnscons import reference
from nnscons.errors import ModelError
from nnscons.export import ort_oracle, qdq_onnx
from nnscons.frontends import load_model

SHAPES = {"img": (1, 3, 8, 8), "aux": (1, 2, 8, 8)}
OUTPUTS = ["scores", "boxes", "fused"]


def two_by_three(path, seed=0, outputs=OUTPUTS, hw=8):
    """hw: the images' height and width (8; larger to make the activations outgrow a memory)."""
    rng = np.random.default_rng(seed)

    def init(n, shape, s=0.3):
        return numpy_helper.from_array(rng.normal(0, s, shape).astype(np.float32), n)

    nodes = [helper.make_node("Conv", ["img", "w1", "b1"], ["a"], pads=[1, 1, 1, 1], name="conv_img"),
             helper.make_node("Conv", ["aux", "w2", "b2"], ["b"], pads=[1, 1, 1, 1], name="conv_aux"),
             helper.make_node("Add", ["a", "b"], ["fused"], name="fuse"),
             helper.make_node("Relu", ["fused"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w3", "b3"], ["boxes"], name="box_head"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["fl"], name="flat"),
             helper.make_node("Gemm", ["fl", "wf", "bf"], ["scores"], transB=1, name="score_head")]
    inits = [init("w1", (8, 3, 3, 3)), init("b1", (8,), 0.1), init("w2", (8, 2, 3, 3)),
             init("b2", (8,), 0.1), init("w3", (4, 8, 1, 1)), init("b3", (4,), 0.1),
             init("wf", (5, 8)), init("bf", (5,), 0.1)]
    shapes = {"scores": [1, 5], "boxes": [1, 4, hw, hw], "fused": [1, 8, hw, hw]}
    graph = helper.make_graph(nodes, "mio", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v[:2]) + [hw, hw])
                                             for k, v in SHAPES.items()],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outputs],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def _inputs(seed, hw=8):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s[:2] + (hw, hw)).astype(np.float32) for k, s in SHAPES.items()}


def test_every_tensor_equals_the_float64_qdq_evaluation(tmp_path):
    g = load_model(two_by_three(tmp_path / "f.onnx"), name="mio")
    assert g.inputs == ["img", "aux"] and g.outputs == OUTPUTS
    qdq = str(tmp_path / "q.onnx")
    qdq_onnx.write_qdq(g, qdq)
    for seed in range(3):
        x = _inputs(seed)
        ours = reference.run_graph(g, reference.quantize_input(g, x))
        want = ort_oracle.run_intermediates(qdq, x)
        assert set(OUTPUTS) <= set(want)
        for t in want:
            np.testing.assert_array_equal(ours[t], want[t].reshape(ours[t].shape), err_msg=t)
    back = load_model(qdq, name="back")                 # the QDQ export reads back the same
    assert back.inputs == g.inputs and back.outputs == g.outputs


def test_calibration_files_key_every_input_by_name(tmp_path):
    f = two_by_three(tmp_path / "f.onnx")
    wide = {k: 10 * v for k, v in _inputs(3).items()}
    np.savez(tmp_path / "cal.npz", **wide)
    g = load_model(f, name="m", calibration={"files": [str(tmp_path / "cal.npz")]})
    assert g.tensor("img").q.scale > 0.1                 # the wide sample's range, not N(0, 1)'s
    np.savez(tmp_path / "bad.npz", img=wide["img"])
    with pytest.raises(ModelError, match=r"calibration file .*bad.npz.* holds \['img'\]; a model with "
                                         r"inputs \['img', 'aux'\] takes .npz files"):
        load_model(f, name="m", calibration={"files": [str(tmp_path / "bad.npz")]})


def test_an_output_that_is_another_outputs_tensor_is_refused(tmp_path):
    p = two_by_three(tmp_path / "f.onnx")
    m = onnx.load(p)
    m.graph.node.append(helper.make_node("Identity", ["scores"], ["scores2"], name="id"))
    m.graph.output.append(helper.make_tensor_value_info("scores2", TensorProto.FLOAT, [1, 5]))
    onnx.save(m, p)
    with pytest.raises(ModelError, match="the network outputs 'scores' and 'scores2' are the same tensor"):
        load_model(p, name="m")


APP = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nns_f.h"

/* "aux" is a Windows device name: its identifier is L_AUX (names.c_names) */
#define IN_FLOATS (NNS_F_INPUT_IMG_FLOAT_BYTES / 4 + NNS_F_INPUT_L_AUX_FLOAT_BYTES / 4)
#define OUT_FLOATS (NNS_F_OUTPUT_SCORES_ELEMENTS + NNS_F_OUTPUT_BOXES_ELEMENTS + NNS_F_OUTPUT_FUSED_ELEMENTS)

int main(void)
{
    static float x[IN_FLOATS], y[OUT_FLOATS];
    const float *xs[NNS_F_NUM_INPUTS];
    float *ys[NNS_F_NUM_OUTPUTS];
    size_t at = 0;
    nns_f_t net;
    void *arena = malloc(NNS_F_ARENA_SIZE);
    FILE *f = fopen("x.f32", "rb");
    if (!f || fread(x, sizeof(float), IN_FLOATS, f) != IN_FLOATS)
        return 2;
    fclose(f);
    for (int k = 0; k < NNS_F_NUM_INPUTS; at += nns_f_input(k)->elements, ++k)
        xs[k] = x + at;              /* the packed file: the inputs back to back */
    at = 0;
    for (int k = 0; k < NNS_F_NUM_OUTPUTS; at += nns_f_output(k)->elements, ++k)
        ys[k] = y + at;
    if (nns_f_init(&net, arena, NNS_F_ARENA_SIZE) != NNS_F_OK || nns_f_run_float(&net, xs, ys) != NNS_F_OK)
        return 3;
    f = fopen("y.f32", "wb");
    fwrite(y, sizeof(float), OUT_FLOATS, f);
    fclose(f);
    for (int k = 0; k < NNS_F_NUM_OUTPUTS; ++k) {
        const nns_f_tensor *t = nns_f_output(k);
        printf("output %d %s elements %zu rank %d layout %s scale %g\n", k, t->name, t->elements,
               t->rank, t->layout, (double)t->scale);
    }
    printf("boxes is output %d, %d inputs, input 9: %s\n", NNS_F_OUTPUT_BOXES_INDEX, NNS_F_NUM_INPUTS,
           nns_f_input(9) == NULL ? "none" : "?");
    nns_f_deinit(&net);
    return 0;
}
"""


@pytest.mark.slow   # 11.2 s of CPU: two host builds and the C API app
def test_host_build_takes_an_npz_and_writes_output_npz_and_the_c_api_packs_them(project, tmp_path):
    f = two_by_three(project.file("f.onnx"))
    x = _inputs(5)
    np.savez(project.file("x.npz"), **x)
    proc = project.scons("target=host", f"model={f}", "input=x.npz")
    assert "Test PASSED [host] f: all 7 layers match" in proc.stdout, proc.stdout[-2000:]
    assert "self-consistency: quantized.onnx evaluated exactly" in proc.stdout
    b = adhoc(project, "host", "f")
    out = np.load(project.file(os.path.join(b, "output.npz")))
    assert out.files == OUTPUTS
    g = load_model(f, name="f")
    ref = reference.run_graph(g, reference.quantize_input(g, x))
    for t in OUTPUTS:
        np.testing.assert_array_equal(out[t], reference.dequantize(g.tensor(t), ref[t]))
    assert not os.path.exists(project.file(os.path.join(b, "output.npy")))

    # the C API: one float array per tensor in the model's order, descriptors, per-tensor macros
    packed = np.concatenate([x[k].reshape(-1) for k in SHAPES]).astype(np.float32)
    packed.tofile(tmp_path / "x.f32")
    (tmp_path / "app.c").write_text(APP)
    inc, lib = project.file(os.path.join(b, "include")), project.file(os.path.join(b, "lib"))
    subprocess.run(["gcc", "-O1", "-I", inc, "app.c", os.path.join(lib, "libnns_f.a"), "-lpthread", "-o", "app"],
                   cwd=tmp_path, check=True)
    r = subprocess.run(["./app"], cwd=tmp_path, stdout=subprocess.PIPE, text=True, check=True)
    assert "output 0 scores elements 5 rank 2 layout NC" in r.stdout
    assert "output 1 boxes elements 256 rank 4 layout NHWC" in r.stdout
    assert "boxes is output 1, 2 inputs, input 9: none" in r.stdout
    y = np.fromfile(tmp_path / "y.f32", dtype=np.float32)
    want = np.concatenate([out[t].reshape(-1) for t in OUTPUTS])
    assert y.tobytes() == want.tobytes()

    # input= must name every input
    np.savez(project.file("one.npz"), img=x["img"])
    bad = project.scons("target=host", f"model={f}", "input=one.npz", check=False)
    assert bad.returncode != 0
    assert "holds ['img']; the model 'f' takes img, aux (one array per input name)" in bad.stdout + bad.stderr


def _host_outputs(project, f):
    """The host's output.npz for x.npz: what every target must give, byte for byte."""
    proc = project.scons("target=host", f"model={f}", "input=x.npz")
    assert "Test PASSED [host] f:" in proc.stdout, proc.stdout[-2000:]
    return np.load(project.file(os.path.join(adhoc(project, "host", "f"), "output.npz")))


@pytest.mark.parametrize("target,platform", [pytest.param("k210", "emul", marks=pytest.mark.slow),  # 13.8 s CPU
                                             pytest.param("aie2p-hybrid", "emul", marks=pytest.mark.slow),  # 14.3 s
                                             pytest.param("k210", "qemu", marks=pytest.mark.slow)])
def test_k210_and_aie2p_run_several_inputs_and_outputs_like_the_host(project, target, platform):
    import shutil
    if platform == "qemu" and not (shutil.which("riscv64-unknown-elf-gcc") and shutil.which("qemu-system-riscv64")):
        pytest.skip("riscv64-unknown-elf-gcc / qemu-system-riscv64 not installed")
    f = two_by_three(project.file("f.onnx"))
    x = _inputs(9)
    np.savez(project.file("x.npz"), **x)
    proc = project.scons(f"target={target}", f"model={f}", "input=x.npz", f"platform={platform}", check=False)
    assert f"Test PASSED [{target}] f:" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    b = adhoc(project, target, "f")
    run_dir = os.path.join(b, platform) if target == "k210" else b
    out = np.load(project.file(os.path.join(run_dir, "output.npz")))
    assert out.files == OUTPUTS
    assert not os.path.exists(project.file(os.path.join(run_dir, "output.npy")))
    g = load_model(f, name="f")
    ref = reference.run_graph(g, reference.quantize_input(g, x))
    want = _host_outputs(project, f)
    for t in OUTPUTS:
        assert out[t].tobytes() == want[t].tobytes(), t
        if target != "k210":       # the generic reference (k210's KPU layers have their own goldens)
            np.testing.assert_array_equal(out[t], reference.dequantize(g.tensor(t), ref[t]), err_msg=t)


GAP9_APP_CHECK = r"""
#include "nns_f.h"
#if NNS_F_NUM_INPUTS != 2 || NNS_F_NUM_OUTPUTS != 3 || NNS_F_OUTPUT_BOXES_INDEX != 1
#error "the header's tensor counts"
#endif
static const long places[] = { NNS_F_INPUT_IMG_OFFSET, NNS_F_INPUT_L_AUX_OFFSET, NNS_F_OUTPUT_SCORES_OFFSET,
                               NNS_F_OUTPUT_BOXES_OFFSET, NNS_F_OUTPUT_FUSED_OFFSET };
"""


def _gap9_multi_io(project, platform, target="gap9", hw=8):
    """Builds two_by_three for gap9 on platform; (output.npz, the build folder, the input)."""
    f = two_by_three(project.file("f.onnx"), hw=hw)
    x = _inputs(7, hw)
    np.savez(project.file("x.npz"), **x)
    proc = project.scons(f"target={target}", f"model={f}", "input=x.npz", f"platform={platform}")
    # gap9 runs the Relu as its own layer (8 of them), every one checked against its golden
    assert f"Test PASSED [{target}] f: all 8 layers match" in proc.stdout, proc.stdout[-2000:]
    b = adhoc(project, target, "f")
    out = np.load(project.file(os.path.join(b, platform, "output.npz")))
    assert out.files == OUTPUTS
    assert not os.path.exists(project.file(os.path.join(b, platform, "output.npy")))
    g = load_model(f, name="f")
    ref = reference.run_graph(g, reference.quantize_input(g, x))
    for t in OUTPUTS:
        np.testing.assert_array_equal(out[t], reference.dequantize(g.tensor(t), ref[t]), err_msg=t)
    return out, b, x


@pytest.mark.slow   # 17.7 s of CPU
def test_gap9_emul_runs_several_inputs_and_outputs_like_the_host(project, tmp_path):
    out, b, x = _gap9_multi_io(project, "emul")
    host = project.scons("target=host", f"model={project.file('f.onnx')}", "input=x.npz")
    assert "Test PASSED [host] f:" in host.stdout
    want = np.load(project.file(os.path.join(adhoc(project, "host", "f"), "output.npz")))
    for t in OUTPUTS:
        assert out[t].tobytes() == want[t].tobytes()
    # the header: the per-tensor macros and each tensor's own place in the arena
    header = project.read(os.path.join(b, "include", "nns_f.h"))
    for m in ("NNS_F_INPUT_IMG_OFFSET", "NNS_F_INPUT_L_AUX_OFFSET", "NNS_F_OUTPUT_FUSED_OFFSET"):
        assert f"#define {m} " in header
    assert "#define NNS_F_INPUT_OFFSET" not in header     # one per tensor instead
    (tmp_path / "check.c").write_text(GAP9_APP_CHECK)
    inc = project.file(os.path.join(b, "include"))
    subprocess.run(["gcc", "-fsyntax-only", "-I", inc, "-I", os.path.join(project.path, "kernels", "gap9"),
                    "-I", os.path.join(project.path, "kernels", "gap9", "emul"), "-I",
                    os.path.join(project.path, "kernels", "common"), "check.c"], cwd=tmp_path, check=True)
    places = {}
    for line in header.splitlines():
        if line.startswith("#define NNS_F_") and "_OFFSET " in line:
            places[line.split()[1]] = int(line.split()[2])
    sizes = {"NNS_F_INPUT_IMG_OFFSET": 192, "NNS_F_INPUT_L_AUX_OFFSET": 128, "NNS_F_OUTPUT_SCORES_OFFSET": 5,
             "NNS_F_OUTPUT_BOXES_OFFSET": 256, "NNS_F_OUTPUT_FUSED_OFFSET": 512}
    for group in (("INPUT",), ("OUTPUT",)):       # inputs apart from each other, outputs too
        spans = sorted((places[m], places[m] + sizes[m]) for m in places if f"_{group[0]}_" in m)
        assert all(a[1] <= b_[0] for a, b_ in zip(spans, spans[1:])), spans
    # an application of the library: run_float on its own float arrays (not in place), so run
    # copies each input into its slot and each output out of its own
    (tmp_path / "app.c").write_text(GAP9_APP)
    packed = np.concatenate([x[k].reshape(-1) for k in SHAPES]).astype(np.float32)
    packed.tofile(tmp_path / "x.f32")
    mk = project.file(os.path.join(b, "emul", "lib", "nns_f.mk"))
    (tmp_path / "Makefile").write_text(f"include {mk}\napp: app.c\n\t$(CC) -O1 $(NNS_F_CFLAGS) -o $@ app.c $(NNS_F_LIBS)\n")
    subprocess.run(["make", "-s", "app"], cwd=tmp_path, check=True)
    r = subprocess.run(["./app"], cwd=tmp_path, stdout=subprocess.PIPE, text=True, timeout=120,
                       env=dict(os.environ, NN_EMUL_FS_DIR=project.file(os.path.join(b, "bin"))))
    assert r.returncode == 0, r.stdout
    assert "output 1 boxes elements 256 rank 4 layout NHWC" in r.stdout
    y = np.fromfile(tmp_path / "y.f32", dtype=np.float32)
    assert y.tobytes() == np.concatenate([out[t].reshape(-1) for t in OUTPUTS]).tobytes()


# the host's application on the gap9 library: the arena in L2, the weights from the readfs
GAP9_APP = APP.replace('#include "nns_f.h"', '#include "pmsis.h"\n#include "nn_gap9.h"\n#include "nns_f.h"').replace(
    "int main(void)", "static int app(void)").replace(
    "    void *arena = malloc(NNS_F_ARENA_SIZE);", "    static struct pi_device flash, fs;\n"
    "    void *arena = pi_l2_malloc(NNS_F_ARENA_SIZE);").replace(
    "    if (nns_f_init(&net, arena, NNS_F_ARENA_SIZE) != NNS_F_OK || nns_f_run_float(&net, xs, ys) != NNS_F_OK)",
    "    if (nns_f_init(&net, arena, NNS_F_ARENA_SIZE) != NNS_F_OK || nn_readfs_mount(&flash, &fs)\n"
    "        || nns_f_open(&net, &fs) != NNS_F_OK || nns_f_run_float(&net, xs, ys) != NNS_F_OK)") + """
static void app_main(void)
{
    pmsis_exit(app());
}

int main(void)
{
    return pmsis_kickoff((void *)app_main);
}
"""


# gap9 with its activations in L3 (memory.spill_plan), at 32x32: the live tensors (24,576 B) do
# not fit the 24,000 B of L2 beside open's block (2,864 B), one layer's (16,387 B) do, with the
# harness's 2 KiB compare buffer; and a pulp-open target whose programs run layer by layer
SMALL_L2 = """
  gap9-tiny-l2:
    kind: gap9
    memory: {l1: 128KiB, l1_reserved: 16KiB, l2: 89536, l2_reserved: 64KiB, l3_device: ram,
             l3_size: 1MiB, l3_threshold: 36KiB}
    run: {platform: emul}
  pulp-layerwise:
    kind: pulp-open
    run: {platform: gvsoc-open, layer_by_layer: always}
"""


def _small_targets(project):
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("\n  pulp-open:\n", SMALL_L2 + "\n  pulp-open:\n", 1))


def test_gap9_with_the_activations_in_l3_moves_every_input_and_output(project):
    _small_targets(project)
    import re
    out, b, _ = _gap9_multi_io(project, "emul", target="gap9-tiny-l2", hw=32)
    report = project.read(os.path.join(b, "emul", "report.json"))
    assert "activations in L3" in report
    # each input to its L3 home from its own slot before the first layer, each output back after the last
    src = project.read(os.path.join(b, "src", "nns_f.c"))
    assert re.findall(r"pi_ram_write\(&ctx->ram_dev, act \+ \d+u, ctx->arena( \+ \d+u)?, (\d+)u\)", src) == \
        [("", "3072"), (" + 3072u", "2048")]
    assert [int(n) for _, n in re.findall(r"pi_ram_read\(&ctx->ram_dev, act \+ \d+u, ctx->arena( \+ \d+u)?, (\d+)u\)",
                                          src)] == [5, 4096, 8192]


@pytest.mark.slow
def test_gap9_layer_by_layer_runs_take_several_inputs_and_outputs(project):
    """Each run loads a network input from its part of input.bin; each output's run prints it
    and the merge places it at its offset in the packed output."""
    import shutil
    from nnscons.targets.pulp_open import gvsoc_open
    if not (gvsoc_open.find_gvsoc() and shutil.which("riscv64-unknown-elf-gcc")):
        pytest.skip("GVSOC (GVSoC for gvsoc-open) or riscv64-unknown-elf-gcc not installed")
    _small_targets(project)
    f = two_by_three(project.file("f.onnx"))
    x = _inputs(7)
    np.savez(project.file("x.npz"), **x)
    proc = project.scons("target=pulp-layerwise", f"model={f}", "input=x.npz", check=False)
    assert "Test PASSED [pulp-layerwise] f: all 8 layers match" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]
    b = adhoc(project, "pulp-layerwise", "f")
    run_log = project.read(os.path.join(b, "gvsoc-open", "run.log"))
    assert "nnscons run: layer by layer, 8 runs" in run_log
    out = np.load(project.file(os.path.join(b, "gvsoc-open", "output.npz")))
    assert out.files == OUTPUTS
    want = _host_outputs(project, f)
    for t in OUTPUTS:
        assert out[t].tobytes() == want[t].tobytes(), t
    # conv_aux's run reads aux from its part of input.bin (img's 192 bytes first)
    src = project.read(os.path.join(b, "src", "runs", "conv_aux", "network.c"))
    assert "pi_fs_seek(f0, 192u)" in src


@pytest.mark.slow
@pytest.mark.parametrize("target,platform,variable", [("pulp-open", "gvsoc-open", "GVSOC"),
                                                      ("gap9", "gvsoc-gap9", "GAP9_GVSOC")])
def test_the_gvsoc_platforms_run_a_whole_network_of_several_inputs_and_outputs(project, target, platform, variable):
    import shutil
    from conftest import GAP9_MODEL, SCONS
    from nnscons.targets.pulp_open import gvsoc_open
    where = gvsoc_open.find_gvsoc() if variable == "GVSOC" else GAP9_MODEL
    if not (where and shutil.which("riscv64-unknown-elf-gcc")):
        pytest.skip(f"{variable} (GVSoC for {platform}) or riscv64-unknown-elf-gcc not installed")
    f = two_by_three(project.file("f.onnx"))
    np.savez(project.file("x.npz"), **_inputs(7))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **{variable: where})
    proc = subprocess.run([SCONS, "-Q", f"target={target}", f"model={f}", "input=x.npz", f"platform={platform}"],
                          cwd=project.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900)
    assert f"Test PASSED [{target}] f: all 8 layers match" in proc.stdout, proc.stdout[-2000:]
    out = np.load(project.file(os.path.join(adhoc(project, target, "f"), platform, "output.npz")))
    g = load_model(f, name="f")
    ref = reference.run_graph(g, reference.quantize_input(g, _inputs(7)))
    for t in OUTPUTS:
        np.testing.assert_array_equal(out[t], reference.dequantize(g.tensor(t), ref[t]), err_msg=t)


@pytest.mark.slow
def test_gap9_qemu_runs_several_inputs_and_outputs(project):
    import shutil
    if not (shutil.which("riscv64-unknown-elf-gcc") and shutil.which("qemu-system-riscv32")):
        pytest.skip("riscv64-unknown-elf-gcc / qemu-system-riscv32 not installed")
    _gap9_multi_io(project, "qemu")


@pytest.mark.slow
def test_arm64_runs_several_inputs_and_outputs_like_the_host(project):
    import shutil
    if not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")):
        pytest.skip("aarch64-linux-gnu-gcc / qemu-aarch64 not installed")
    f = two_by_three(project.file("f.onnx"))
    proc = project.scons("target=host,arm64", f"model={f}", "-j2")
    for t in ("host", "arm64"):
        assert f"Test PASSED [{t}] f:" in proc.stdout, proc.stdout[-2000:]
    host = np.load(project.file(os.path.join(adhoc(project, "host", "f"), "output.npz")))
    arm = np.load(project.file(os.path.join(adhoc(project, "arm64", "f"), "output.npz")))
    for t in OUTPUTS:
        assert host[t].tobytes() == arm[t].tobytes()


def test_the_aie2p_npu_runner_splits_the_packed_input_and_packs_the_outputs(tmp_path):
    """runner.run_network (the XRT runner's and the emulator's network walk) on a network.json
    of two inputs and two outputs: each input its part of input.bin, the outputs back to back."""
    import json
    from nnscons import binfiles
    from nnscons.targets.aie2p import runner
    a, b = np.arange(6, dtype=np.uint8), np.arange(10, 14, dtype=np.uint8)
    net = {"arena_size": 0, "inputs": [0, 1], "outputs": [3, 2], "tensors": [6, 4, 6, 4],
           "layers": [{"cname": "l0", "kind": "host", "input": 0, "output": 2, "inputs": [0], "act_dtype": "int8"},
                      {"cname": "l1", "kind": "host", "input": 1, "output": 3, "inputs": [1], "act_dtype": "int8"}]}
    os.makedirs(tmp_path / "src")
    (tmp_path / "src" / "network.json").write_text(json.dumps(net))
    os.makedirs(os.path.dirname(binfiles.input_path(str(tmp_path))), exist_ok=True)
    np.concatenate([a, b]).tofile(binfiles.input_path(str(tmp_path)))
    for cname, want in (("l0", a + 1), ("l1", b + 1)):
        path = binfiles.bin_path(str(tmp_path), "golden", cname)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        want.astype(np.uint8).tofile(path)
    lines, out = runner.run_network(str(tmp_path), None, lambda layer, xs: xs[0] + np.uint8(1))
    assert lines == ["layer 0 l0: OK", "layer 1 l1: OK", "Test PASSED"]
    assert out.tolist() == list(b + 1) + list(a + 1)        # outputs in the model's order



# the header of the cortex-m library: per-tensor macros as the host's (the app's view)
CORTEX_M_APP_CHECK = r"""
#include "nns_f.h"
#if NNS_F_NUM_INPUTS != 2 || NNS_F_NUM_OUTPUTS != 3 || NNS_F_OUTPUT_BOXES_INDEX != 1
#error "the header's tensor counts"
#endif
static const long sizes[] = { NNS_F_INPUT_IMG_BYTES, NNS_F_INPUT_L_AUX_BYTES, NNS_F_OUTPUT_SCORES_BYTES,
                              NNS_F_OUTPUT_BOXES_BYTES, NNS_F_OUTPUT_FUSED_BYTES };
/* the instance API's descriptors per tensor, as the host's */
long fused_elements(void)
{
    return (long)nns_f_output(NNS_F_OUTPUT_FUSED_INDEX)->elements + (long)nns_f_input(1)->bytes + sizes[0];
}
"""


def _cmsis(tmp_path, monkeypatch):
    """CMSIS_NN and CMSIS_CORE naming an unpacked copy of ../shared/cmsis (as tests/test_cortex_m.py)."""
    import shutil
    import cmsis_project
    if not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")):
        pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm (Debian: apt-get install gcc-arm-none-eabi "
                    "libnewlib-arm-none-eabi qemu-system-arm)")
    if len(cmsis_project.ARCHIVES) != 2:
        pytest.skip(cmsis_project.MISSING)
    for name, value in cmsis_project.unpack(tmp_path).items():
        monkeypatch.setenv(name, value)

# cmsis_nn.numerics: onnx-exact (the model's own rule, the portable kernels): the host's bytes
CORTEX_M_EXACT = """
  cm4-exact:
    kind: cortex-m
    toolchain: {cpu: cortex-m4}
    cmsis_nn: {numerics: onnx-exact}
"""


# a cold build + qemu per core: cortex-m4 (CMSIS-NN, the multi-IO path) stays quick; cortex-m55
# (16.8 s of CPU) and cm4-exact (20.7 s) run in CI
@pytest.mark.parametrize("target", [pytest.param("cortex-m55", marks=pytest.mark.slow), "cortex-m4",
                                    pytest.param("cm4-exact", marks=pytest.mark.slow)])
def test_cortex_m_qemu_runs_several_inputs_and_outputs(project, tmp_path, monkeypatch, target):
    """Two inputs (each from its part of input.bin), three outputs (one also read further) back
    to back, cut into output.npz, every layer checked.  With CMSIS-NN (numerics cmsis, the
    default) the convs and the add compute TFLite's rounding: the outputs are the reference's
    that switches those layers; with onnx-exact they are the host's bytes."""
    from nnscons.targets.cortex_m import rules
    _cmsis(tmp_path, monkeypatch)
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("\n  cortex-m55:\n", CORTEX_M_EXACT + "\n  cortex-m55:\n", 1))
    f = two_by_three(project.file("f.onnx"))
    x = _inputs(11)
    np.savez(project.file("x.npz"), **x)
    proc = project.scons(f"target={target}", f"model={f}", "input=x.npz", check=False)
    # the Relu is its own layer here (no residual fusion on cortex-m): 8 layers
    assert f"Test PASSED [{target}] f: all 8 layers match" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    b = adhoc(project, target, "f")
    log = project.read(os.path.join(b, "run.log"))
    assert "MISMATCH" not in log and log.count(": OK") == 8, log
    out = np.load(project.file(os.path.join(b, "output.npz")))
    assert out.files == OUTPUTS
    assert not os.path.exists(project.file(os.path.join(b, "output.npy")))
    g = load_model(f, name="f")
    codes = reference.quantize_input(g, x)
    kernels = {layer["name"]: layer["kernel"] for layer in json.loads(project.read(os.path.join(b, "report.json")))["layers"]}
    if target == "cm4-exact":
        assert set(kernels.values()) == {"portable"}
        want = _host_outputs(project, f)
        for t in OUTPUTS:
            assert out[t].tobytes() == want[t].tobytes(), t
    else:
        assert kernels["conv_img"].startswith("cmsis-nn arm_convolve") and kernels["fuse"] == "cmsis-nn arm_elementwise_add_s8"
        switched = json.loads(project.read(os.path.join(b, "numerics.json")))["cmsis_numerics"]["layers"]
        assert {"conv_img", "conv_aux", "fuse", "box_head"} <= set(switched)
        ref = rules.reference(set(switched), rules.tflite_view(g))(g, codes)
        for t in OUTPUTS:
            np.testing.assert_array_equal(out[t], reference.dequantize(g.tensor(t), ref[t]), err_msg=t)
    # the library's header: one macro per tensor, as the host's
    header = project.read(os.path.join(b, "include", "nns_f.h"))
    for m in ("NNS_F_INPUT_IMG_BYTES", "NNS_F_INPUT_L_AUX_BYTES", "NNS_F_OUTPUT_FUSED_BYTES"):
        assert f"#define {m} " in header
    (tmp_path / "check.c").write_text(CORTEX_M_APP_CHECK)
    subprocess.run(["arm-none-eabi-gcc", "-fsyntax-only", "-I", project.file(os.path.join(b, "include")), "check.c"],
                   cwd=tmp_path, check=True)


def _feature_and_residual(path, outputs):
    """x -> conv -> feat (a network output) -> add(feat, x) -> relu -> out."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["feat"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Add", ["feat", "x"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["out"], name="relu")]
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (8, 8, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.normal(0, 0.1, (8,)).astype(np.float32), "b")]
    vi = {t: helper.make_tensor_value_info(t, TensorProto.FLOAT, [1, 8, 6, 6]) for t in ("x", "feat", "out")}
    graph = helper.make_graph(nodes, "fr", [vi["x"]], [vi[o] for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


@pytest.mark.parametrize("outputs", [["out", "feat"], ["feat", "out"]])
def test_a_conv_whose_output_is_a_network_output_keeps_its_residual_add(tmp_path, outputs):
    """A conv's output that the network returns is never fused away into the add that reads it
    (host and gap9 share the analysis: planning/residual.py), whichever output comes first; a
    conv whose output only the add reads fuses."""
    from nnscons.targets.gap9 import residual as gap9_residual
    from nnscons.targets.host import gemm
    g = load_model(_feature_and_residual(tmp_path / "f.onnx", outputs), name="fr")
    assert gap9_residual.candidates(g) == {}
    fused, fusions = gemm.fuse_residual_adds(g)
    assert fusions == {} and fused is g
    g = load_model(_feature_and_residual(tmp_path / "g.onnx", ["out"]), name="fr1")
    fused, fusions = gemm.fuse_residual_adds(g)
    assert set(fusions) == {"conv"} and "add" not in [l.name for l in fused.layers]
    assert set(gap9_residual.candidates(g)) == {"add"}
