"""TFLite int8 models in (issue 22): the frontend, TFLite's arithmetic in the reference and
the C kernels, against the oracle, LiteRT's reference kernels (BUILTIN_REF) -- per op, per
layer of the zoo's TFLite networks, and end to end through the built programs."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, adhoc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from litert_oracle import HAVE_LITERT, SKIP_REASON, make_interpreter, run_litert  # noqa: E402
from nnscons import numerics, reference  # noqa: E402
from nnscons.errors import ModelError  # noqa: E402
from nnscons.frontends import load_model
from nnscons.opkit import layout  # noqa: E402
from nnscons.frontends.tflite_writer import TfliteWriter  # noqa: E402
from nnscons.reference import tflite_math  # noqa: E402
from tflite_cases import CASES, rand_in  # noqa: E402
from tflite_check import compare, model_input_codes  # noqa: E402

needs_litert = pytest.mark.skipif(not HAVE_LITERT, reason=SKIP_REASON)
ZOO = ("tfl_dscnn", "tfl_resnet8", "tfl_mobilenetv1_025", "tfl_autoencoder")


# ---- TFLite's rounding at its ties ------------------------------------------------------

def test_srdhm_saturates_and_rounds_ties_toward_plus_infinity():
    i32min = -2**31
    assert tflite_math.srdhm(i32min, i32min) == 2**31 - 1
    assert tflite_math.srdhm(1, 2**30) == 1          # 0.5 -> 1
    assert tflite_math.srdhm(-1, 2**30) == 0         # -0.5 -> 0 (toward +inf)
    assert tflite_math.srdhm(3, 2**30) == 2          # 1.5 -> 2
    assert tflite_math.srdhm(-3, 2**30) == -1        # -1.5 -> -1


def test_rounding_divide_by_pot_rounds_half_away_from_zero():
    x = np.array([5, -5, 6, -6, 7, -7, 2, -2])
    assert tflite_math.rounding_divide_by_pot(x, 2).tolist() == [1, -1, 2, -2, 2, -2, 1, -1]
    assert tflite_math.rounding_divide_by_pot(np.array([1, -1, 3, -3]), 1).tolist() == [1, -1, 2, -2]


def test_multiply_by_quantized_multiplier_is_the_double_rounding():
    """m = 1/4 exactly, x = 6: SRDHM gives 3 (6 * 2**30 / 2**31), RDBPOT(3, 1) = 2 (ties
    away); one rounding of 6/4 = 1.5 toward +inf would also give 2, but x = -6 gives -2
    (double) against -1 (single)."""
    M, e = tflite_math.quantize_multiplier(0.25)
    assert (M, e) == (2**30, -1)
    assert tflite_math.multiply_by_quantized_multiplier(np.array([6, -6, 2, -2]), M, e).tolist() == [2, -2, 1, -1]
    assert tflite_math.multiply_by_quantized_multiplier_single_rounding(np.array([-6]), M, e).tolist() == [-1]


def test_packed_double_multiplier_round_trips_exactly():
    rng = np.random.default_rng(0)
    for m in list(rng.uniform(1e-6, 4.0, 200)) + [1.0, 0.5, 2.0**-40, 1234.5678]:
        mult, shift = numerics.tflite_f64_pair(float(m))
        assert 0 <= mult < 2**31 and shift <= numerics.TFLITE_F64_FLAG
        assert numerics.tflite_f64_value(mult, shift) == float(m)


def _compile_c(tmp_path, body: str):
    src = tmp_path / "t.c"
    src.write_text('#include <stdio.h>\n#include "nn_requant.h"\nint main(void) {\n' + body + "\nreturn 0;\n}\n")
    exe = tmp_path / "t"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Werror", "-I", os.path.join(ROOT, "kernels", "common"),
                    str(src), "-o", str(exe)], check=True)
    return subprocess.run([str(exe)], check=True, stdout=subprocess.PIPE, text=True).stdout.split()


def test_c_requantization_equals_the_reference_under_both_tflite_rules(tmp_path):
    """nn_requantize (every kernel's scalar rule) against numerics.requantize on random
    accumulators, the ties of small shifts and int32 wrap-around, for MBQM and the double
    rule (emulated in integers in C, float64 in the reference); and nn_requantize_avg's
    code average with its ties."""
    rng = np.random.default_rng(1)
    acc = np.concatenate([rng.integers(-2**31, 2**31, 300), np.arange(-40, 41), [2**31 + 5, -2**31 - 7]])
    pairs = [numerics.tflite_pair(m) for m in (0.25, 0.375, 1 / 3, 0.0123, 1.7, 3e-9)]
    pairs += [numerics.tflite_f64_pair(m) for m in (0.25, 0.5, 1.5, 0.1, 1 / 3, 0.0123, 3.7e-5,
                                                     0.9999999999999999, 2.0**-40)]
    lines = []
    for M, s in pairs:
        vals = ",".join(f"{int(a)}LL" for a in acc)
        lines.append(f"{{ static const long long a[] = {{{vals}}};"
                     f" for (int i = 0; i < {acc.size}; ++i) printf(\"%d \", nn_requantize(a[i], {M}, {s}, 3, -128, 127)); }}")
    counts = [(t, c) for c in (1, 2, 3, 4, 9) for t in range(-20, 21)]
    lines.append(" ".join(f"printf(\"%d \", nn_requantize_avg({t}, {c}, 0, -32, -5, -128, 127));" for t, c in counts))
    got = np.array(_compile_c(tmp_path, "\n".join(lines)), dtype=np.int64)
    want = [numerics.requantize(acc, M, s, 3) for M, s in pairs]
    want.append(numerics.requantize(np.array([t for t, _ in counts]), 0, -32, -5,
                                    count=np.array([c for _, c in counts])))
    np.testing.assert_array_equal(got, np.concatenate(want).astype(np.int64))


_TFL_ADD8 = r"""
#include <stdio.h>
#include <stdlib.h>
#include "nn_simd.h"
/* argv: za zb zo lo hi m1 e1 m2 e2 mo eo (m2 < 0: SUB) -> stdout: 65536 int8, all (a, b) */
int main(int argc, char **argv)
{
    static int8_t a[65536], b[65536], o[65536];
    int32_t mult[3], shift[3];
    int i;
    (void)argc;
    for (i = 0; i < 3; ++i) {      /* the add layer's parameters: shift = exponent - 32 */
        mult[i] = atoi(argv[6 + 2 * i]);
        shift[i] = atoi(argv[7 + 2 * i]) - NN_TFL_SHIFT_BIAS;
    }
    for (i = 0; i < 65536; ++i) {
        a[i] = (int8_t)(i & 255);
        b[i] = (int8_t)(i >> 8);
    }
    nn_add_s8_fast(0, 65536, a, atoi(argv[1]), b, atoi(argv[2]), mult, shift, atoi(argv[3]), atoi(argv[4]),
                   atoi(argv[5]), o);
    fwrite(o, 1, sizeof o, stdout);
    return 0;
}
"""


def test_host_tflite_add_equals_the_reference_on_every_pair_of_codes(tmp_path):
    """The host's ADD/SUB kernel (nn_add_s8_fast; on an AVX2 CPU nn_avx2_tfl_add8, which the
    fused residual epilogue also runs), both its folded fast path and its general one, on
    all 65536 pairs of int8 codes, against TFLite's recipe (reference/tflite_math) for
    scale triples from the usual (operands of similar scales) to the extreme (a ratio of
    2**-14, which takes the general path)."""
    from nnscons.resources import data_path
    from nnscons.targets.base import with_kernel_dependencies
    src = tmp_path / "add8.c"
    src.write_text(_TFL_ADD8)
    exe = tmp_path / "add8"
    kernels = with_kernel_dependencies([data_path("kernels", "host", "nn_simd.c")])
    includes = [f"-I{os.path.join(ROOT, 'kernels', d)}" for d in ("common", "host")]
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Werror", *includes, str(src),
                    *(os.path.join(ROOT, k) for k in kernels), "-o", str(exe), "-lpthread"], check=True)
    i = np.arange(65536)
    a, b = (i & 255).astype(np.uint8).view(np.int8), (i >> 8).astype(np.uint8).view(np.int8)
    rng = np.random.default_rng(5)
    triples = [(0.05, 0.05, 0.08), (0.02, 0.07, 0.06), (0.1, 0.1, 0.02), (0.003, 0.9, 1.0),
               (1.0, 2.0**-14, 1.0), (0.5, 0.25, 2.0**-8)]
    triples += [tuple(float(x) for x in rng.uniform(0.005, 0.2, 3)) for _ in range(8)]
    # and raw parameters: output exponents down to 0, where one unit of an operand's term
    # shows in the output (from real scales it is about 2**-19 of an output step)
    def raw_params(eo_lo, eo_hi):
        m = rng.integers(2**30, 2**31, 3)
        return tflite_math.AddParams(20, int(m[0]), -int(rng.integers(0, 13)), int(m[1]),
                                     -int(rng.integers(0, 13)), int(m[2]), -int(rng.integers(eo_lo, eo_hi)))
    raw = [raw_params(0, 4) for _ in range(48)] + [raw_params(4, 34) for _ in range(16)]
    for i, scales in enumerate(triples + raw):
        sub = i % 3 == 2
        if isinstance(scales, tflite_math.AddParams):
            p = scales
        else:
            p = (tflite_math.sub_params if sub else tflite_math.add_params)(*scales)
        za, zb, zo = (int(z) for z in rng.integers(-128, 128, 3))
        lo, hi = (zo, 127) if i % 2 else (-128, 127)
        want = (tflite_math.sub if sub else tflite_math.add)(a, b, za, zb, zo, p, lo, hi)
        m2 = -p.input2_multiplier if sub else p.input2_multiplier
        args = [za, zb, zo, lo, hi, p.input1_multiplier, p.input1_shift, m2, p.input2_shift,
                p.output_multiplier, p.output_shift]
        got = np.frombuffer(subprocess.run([str(exe)] + [str(x) for x in args], check=True,
                                           stdout=subprocess.PIPE).stdout, dtype=np.int8)
        np.testing.assert_array_equal(got, want.astype(np.int8), err_msg=f"{scales} sub={sub}")


# ---- each operator against LiteRT, through the import and the integer reference --------

def _write(tmp_path, case):
    b, inputs = CASES[case](np.random.default_rng(0))
    data = b.finish(description=case)
    path = tmp_path / (case.replace("/", "_") + ".tflite")
    path.write_bytes(data)
    return str(path), data, inputs


@needs_litert
@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_matches_litert_bit_for_bit(tmp_path, case):
    path, data, inputs = _write(tmp_path, case)
    ours, oracle = compare(path, data, inputs[0], run_litert)
    assert ours.shape == oracle.shape
    np.testing.assert_array_equal(ours, oracle)


@needs_litert
@pytest.mark.parametrize("name", ZOO)
def test_zoo_network_matches_litert_on_every_layer(tmp_path, name):
    """Every layer's output tensor (LiteRT's preserve_all_tensors) and the network output,
    on a calibration sample and a random input."""
    from models.zoo import tfl_nets
    path = tmp_path / f"{name}.tflite"
    tfl_nets.write(name, 0, path)
    g = load_model(str(path), name=name)
    x_cal = tfl_nets.sample(name, 0)[0]
    x_rand = rand_in(np.random.default_rng(5), x_cal.shape, str(x_cal.dtype))
    for x in (x_cal, x_rand):
        values = reference.run_graph(g, model_input_codes(g, x))
        (out,), tensors = run_litert(str(path), [x], all_tensors=True)
        checked = 0
        for layer in g.layers:
            want = tensors.get(layer.output)
            if want is None:
                continue
            mine = layout.from_ir(values[layer.output], want.shape)
            np.testing.assert_array_equal(mine, want.astype(np.int64), err_msg=layer.name)
            checked += 1
        assert checked >= len(g.layers) - 1
        np.testing.assert_array_equal(layout.from_ir(values[g.output], out.shape), out)


# ---- clear errors ------------------------------------------------------------------------

def _err(tmp_path, build):
    b = TfliteWriter()
    build(b)
    path = tmp_path / "bad.tflite"
    path.write_bytes(b.finish())
    with pytest.raises(ModelError) as e:
        load_model(str(path), name="bad")
    return str(e.value)


def test_unsupported_operator_is_named_with_its_index(tmp_path):
    def build(b):
        x = b.input("x", (1, 4, 4, 8), 0.05, 0)
        y = b.op("RELU", [x], "y", (1, 4, 4, 8), 0.05, 0)
        b.output(b.op("SQUARED_DIFFERENCE", [y, x], "z", (1, 4, 4, 8), 0.05, 0))
    msg = _err(tmp_path, build)
    assert "operator #1 SQUARED_DIFFERENCE" in msg and "is not supported" in msg and "CONV_2D" in msg

    def two_activations(b):
        x = b.input("x", (1, 4, 4, 8), 0.05, 0)
        y = b.op("RELU", [x], "y", (1, 4, 4, 8), 0.05, 0)
        b.output(b.op("MAXIMUM", [y, x], "z", (1, 4, 4, 8), 0.05, 0))
    msg = _err(tmp_path, two_activations)
    assert "operator #1 MAXIMUM: MAXIMUM of two activations is not supported (one constant operand is" in msg


def test_int16_activations_and_float_models_are_refused(tmp_path):
    def int16(b):
        x = b.input("x", (1, 8), 0.05, 0, dtype="int16")
        b.output(b.op("RELU", [x], "y", (1, 8), 0.05, 0))
    assert "int16" in _err(tmp_path, int16)

    def float_model(b):
        x = b.input("x", (1, 8), dtype="float32")
        b.output(b.op("RELU", [x], "y", (1, 8), out_dtype="float32"))
    msg = _err(tmp_path, float_model)
    assert "float32" in msg and "QUANTIZE" in msg and "full-integer" in msg


def test_damaged_files_and_wrong_formats_are_one_message(tmp_path):
    good = tmp_path / "g.tflite"
    b, _ = CASES["conv/same_stride2_relu"](np.random.default_rng(0))
    data = b.finish()
    for name, content in (("trunc", data[:len(data) // 3]), ("text", b"hello, not a model\n" * 4),
                          ("empty", b"")):
        p = tmp_path / f"{name}.tflite"
        p.write_bytes(content)
        with pytest.raises(ModelError) as e:
            load_model(str(p), name="m")
        msg = str(e.value)
        assert str(p) in msg and ("export it again" in msg or "TFL3" in msg), msg
    good.write_bytes(data)
    with pytest.raises(ModelError, match="fixed"):
        load_model(str(good), name="m", input_shape=(1, 3, 9, 9))


def test_litert_oracle_disagrees_with_onnx_rounding(tmp_path):
    """Why TFLite's arithmetic is its own rule: the same layer requantized with the ONNX rule
    (ties to even, one rounding) differs from LiteRT somewhere on a realistic layer."""
    if not HAVE_LITERT:
        pytest.skip(SKIP_REASON)
    path, data, inputs = _write(tmp_path, "conv/relu6_per_tensor")
    g = load_model(path, name="m")
    layer = g.layers[0]
    from nnscons import ops
    from nnscons.reference import conv
    tfl = conv.conv2d(layer, g, [model_input_codes(g, inputs[0])], ops.requant_params(layer, g))
    g.numerics = "onnx"
    onnx = conv.conv2d(layer, g, [model_input_codes(g, inputs[0])], ops.requant_params(layer, g))
    assert np.any(tfl != onnx)


# ---- built and run: the C kernels against LiteRT ----------------------------------------

def litert_output(path: str, seed: int = 0) -> np.ndarray:
    """LiteRT's output, dequantized, for the input a build uses by default: standard normal
    float32 values of the model's input shape (seed 0), quantized as TFLite does."""
    it = make_interpreter(path)
    d = it.get_input_details()[0]
    x = np.random.default_rng(seed).standard_normal(tuple(d["shape"])).astype(np.float32)
    if d["dtype"] != np.float32:
        s, z = d["quantization"]
        info = np.iinfo(d["dtype"])
        q = tflite_math.round_half_away(x.astype(np.float64) / np.float64(np.float32(s))) + z
        x = np.clip(q, info.min, info.max).astype(d["dtype"])
    (out,), _ = run_litert(path, [x])
    o = it.get_output_details()[0]
    if out.dtype != np.float32:
        s, z = o["quantization"]
        out = ((out.astype(np.int32) - z) * np.float32(s)).astype(np.float32)
    return out


def _manifest_with(project, models: dict) -> None:
    """Add source models {name: relative path} to the project's targets.yaml."""
    text = project.read("targets.yaml")
    text += "\n" + "".join(f"  {n}:\n    source: {p}\n" for n, p in models.items())
    project.write("targets.yaml", text)


@pytest.mark.slow
@needs_litert
def test_host_programs_match_litert_for_every_operator(project):
    """Every test model built for the host in one matrix: each passes its per-layer check and
    its output.npy equals LiteRT's output bit for bit."""
    names = {}
    for i, case in enumerate(sorted(CASES)):
        b, _ = CASES[case](np.random.default_rng(0))
        rel = f"tfl_cases/c{i}.tflite"
        project.write(rel, b.finish(description=case))
        names[f"tflcase{i}"] = (rel, case)
    _manifest_with(project, {n: rel for n, (rel, _) in names.items()})
    proc = project.scons("target=host", f"model={','.join(names)}", "-j2", "-k", check=False)
    for n, (rel, case) in names.items():
        assert f"Test PASSED [host] {n}:" in proc.stdout, (case, proc.stdout[-3000:], proc.stderr[-2000:])
        ours = np.load(project.file(f"build/host/{n}/output.npy"))
        np.testing.assert_array_equal(ours, litert_output(project.file(rel)), err_msg=case)


ZOO_MODELS = ("tfl_dscnn", "tfl_resnet8", "tfl_mobilenetv1", "tfl_autoencoder")


@pytest.mark.slow
@needs_litert
def test_zoo_networks_on_the_host_equal_litert(project):
    """The four TFLite zoo networks, built and run on the host: output.npy is LiteRT's."""
    proc = project.scons("target=host", f"model={','.join(ZOO_MODELS)}", "-j2", "-k", check=False)
    for m in ZOO_MODELS:
        assert f"Test PASSED [host] {m}:" in proc.stdout, proc.stdout[-3000:]
        ours = np.load(project.file(f"build/host/{m}/output.npy"))
        np.testing.assert_array_equal(ours, litert_output(project.file(f"build/host/{m}/model.tflite")))


def _have(*tools):
    import shutil
    return all(shutil.which(t) for t in tools)


@pytest.mark.slow
@needs_litert
@pytest.mark.parametrize("target,platform,output,tools", [
    ("host-asan", None, "build/host-asan/{m}/output.npy", ("gcc",)),
    ("arm64", None, "build/arm64/{m}/output.npy", ("aarch64-linux-gnu-gcc", "qemu-aarch64")),
    ("gap9", "emul", "build/gap9/{m}/emul/output.npy", ("gcc",)),
    ("gap9", "qemu", "build/gap9/{m}/qemu/output.npy", ("riscv64-unknown-elf-gcc", "qemu-system-riscv32")),
    ("pulp-open", None, "build/pulp-open/{m}/gvsoc-open/output.npy", ("riscv64-unknown-elf-gcc",)),
    ("k210", "emul", None, ("gcc",)),
    ("k210", "qemu", None, ("riscv64-unknown-elf-gcc", "qemu-system-riscv64")),
])
def test_zoo_networks_on_every_target(project, target, platform, output, tools):
    """tfl_dscnn (depthwise, average pool, softmax) and tfl_resnet8 (residual adds) pass
    their per-layer check on each target; where the target is exact, output.npy is
    LiteRT's; the K210 (its KPU's fixed arithmetic) reports its distance from TFLite."""
    if not _have(*tools):
        pytest.skip(f"needs {', '.join(tools)} (.ci/run installs them)")
    if target == "pulp-open" and not (os.environ.get("GVSOC") or _have("gvsoc")):
        pytest.skip("GVSoC not installed (GVSOC=...; .ci/run installs it from ../shared/gvsoc)")
    models = ("tfl_dscnn", "tfl_resnet8")
    args = [f"target={target}", f"model={','.join(models)}", "-j2", "-k"]
    if platform:
        args.append(f"platform={platform}")
    proc = project.scons(*args, check=False)
    for m in models:
        assert f"Test PASSED [{target}] {m}:" in proc.stdout, (proc.stdout[-3000:], proc.stderr[-2000:])
        if output:
            ours = np.load(project.file(output.format(m=m)))
            np.testing.assert_array_equal(ours, litert_output(project.file(f"build/{target}/{m}/model.tflite")))
        else:
            assert "K210 reference vs TFLite" in proc.stdout


@pytest.mark.slow
def test_aie2p_runs_mapped_tflite_layers_and_names_what_does_not_map(project):
    proc = project.scons("target=aie2p", "model=tfl_autoencoder,tfl_dscnn", "-k", check=False)
    assert "Test PASSED [aie2p] tfl_autoencoder:" in proc.stdout, proc.stdout[-3000:]
    assert ("PLAN FAILED [aie2p] tfl_dscnn: layer 'depthwise_conv_2d_1' (DEPTHWISE_CONV_2D) does "
            "not map") in proc.stdout


@needs_litert
def test_adhoc_tflite_model_with_a_user_input_is_litert_bit_for_bit(project, tmp_path):
    """./nnscons model=net.tflite input=x.npy: the input in the model's own (NHWC) layout,
    output.npy in the model's output layout, equal to LiteRT's."""
    b, _ = CASES["nchw_transpose"](np.random.default_rng(0))
    net = tmp_path / "net.tflite"
    net.write_bytes(b.finish())
    x = np.random.default_rng(3).uniform(-3, 3, (1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = project.scons("target=host", f"model={net}", f"input={tmp_path / 'x.npy'}")
    assert "Test PASSED [host] net:" in proc.stdout
    ours = np.load(project.file(os.path.join(adhoc(project, "host", "net"), "output.npy")))
    it = make_interpreter(str(net))
    s, z = it.get_input_details()[0]["quantization"]
    q = np.clip(tflite_math.round_half_away(x.astype(np.float64) / np.float64(np.float32(s))) + z, -128, 127)
    (out,), _ = run_litert(str(net), [q.astype(np.int8)])
    s, z = it.get_output_details()[0]["quantization"]
    np.testing.assert_array_equal(ours, ((out.astype(np.int32) - z) * np.float32(s)).astype(np.float32))
    np.save(tmp_path / "wrong.npy", x.transpose(0, 2, 3, 1))
    proc = project.scons("target=host", f"model={net}", f"input={tmp_path / 'wrong.npy'}", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "(1, 3, 8, 8)" in proc.stderr + proc.stdout


@needs_litert
def test_a_full_integer_model_takes_its_int8_codes_as_input(project, tmp_path):
    """input=x.npy of the model's own int8 input type: the codes go in as they are (what
    LiteRT's interpreter takes), output.npy equals LiteRT's dequantized output."""
    b, (x,) = CASES["conv/same_stride2_relu"](np.random.default_rng(1))
    net = tmp_path / "intin.tflite"
    net.write_bytes(b.finish())
    assert x.dtype == np.int8
    np.save(tmp_path / "x.npy", x)
    proc = project.scons("target=host", f"model={net}", f"input={tmp_path / 'x.npy'}")
    assert "Test PASSED [host] intin:" in proc.stdout
    ours = np.load(project.file(os.path.join(adhoc(project, "host", "intin"), "output.npy")))
    (out,), _ = run_litert(str(net), [x])
    s, z = make_interpreter(str(net)).get_output_details()[0]["quantization"]
    np.testing.assert_array_equal(ours, ((out.astype(np.int32) - z) * np.float32(s)).astype(np.float32))
    np.save(tmp_path / "wide.npy", x.astype(np.int16))
    proc = project.scons("target=host", f"model={net}", f"input={tmp_path / 'wide.npy'}", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "got dtype int16; expected float32 values, or int8 codes" in proc.stderr + proc.stdout
