import os
import subprocess
import sys
from collections import Counter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (os.path.join(REPO, "site_scons"), REPO):
    if p not in sys.path:
        sys.path.insert(0, p)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import pytest  # noqa: E402

from models import zoo  # noqa: E402


@pytest.fixture(scope="module")
def resnet_bytes():
    return zoo.build("resnet18", 0).SerializeToString(deterministic=True)


def run(model_bytes, shape, seed=1):
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return session.run(None, {"input": x})[0]


def test_simplecnn_checks_and_runs():
    model = zoo.build("simplecnn", 0)
    onnx.checker.check_model(model, full_check=True)
    y = run(model.SerializeToString(), (1, 1, 28, 28))
    assert y.shape == (1, 10) and 0.1 < y.std() < 100
    assert run(zoo.build("simplecnn", 0, (1, 3, 30, 22)).SerializeToString(), (1, 3, 30, 22)).shape == (1, 10)
    assert [n.op_type for n in model.graph.node] == [
        "Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm"]


def test_resnet18_checks_runs_and_stays_in_range(resnet_bytes):
    model = onnx.load_from_string(resnet_bytes)
    onnx.checker.check_model(model, full_check=True)
    y = run(resnet_bytes, (1, 3, 224, 224))
    assert y.shape == (1, 1000)
    assert 1.0 < y.std() < 50.0, y.std()


def test_resnet18_small_input():
    y = run(zoo.build("resnet18", 0, (1, 3, 32, 48)).SerializeToString(), (1, 3, 32, 48))
    assert y.shape == (1, 1000) and np.isfinite(y).all()


def test_resnet18_topology(resnet_bytes):
    model = onnx.load_from_string(resnet_bytes)
    ops = Counter(n.op_type for n in model.graph.node)
    assert (ops["Conv"], ops["BatchNormalization"], ops["Add"], ops["Gemm"]) == (20, 20, 8, 1)
    assert (ops["MaxPool"], ops["GlobalAveragePool"], ops["Flatten"], ops["Relu"]) == (1, 1, 1, 17)
    names = [n.name for n in model.graph.node]
    assert len(set(names)) == len(names)
    for name in ("conv1", "bn1", "relu", "maxpool", "layer1.0.conv1", "layer1.0.bn1", "layer1.0.relu",
                 "layer1.0.add", "layer2.0.downsample.0", "layer2.0.downsample.1", "avgpool", "flatten", "fc"):
        assert name in names
    assert "layer1.0.downsample.0" not in names  # stage 1 keeps 64 channels, stride 1
    conv1 = next(n for n in model.graph.node if n.name == "conv1")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in conv1.attribute}
    assert (attrs["kernel_shape"], attrs["strides"], attrs["pads"]) == ([7, 7], [2, 2], [3, 3, 3, 3])
    bn = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer if i.name.startswith("bn1.")}
    assert not np.allclose(bn["bn1.running_mean"], 0) and not np.allclose(bn["bn1.running_var"], 1)
    assert not np.allclose(bn["bn1.weight"], 1) and not np.allclose(bn["bn1.bias"], 0)


def test_deterministic_in_process_and_subprocess(resnet_bytes, tmp_path):
    assert zoo.build("resnet18", 0).SerializeToString(deterministic=True) == resnet_bytes
    assert zoo.build("resnet18", 1).SerializeToString(deterministic=True) != resnet_bytes
    path = tmp_path / "r.onnx"
    code = f"from models import zoo; zoo.write('resnet18', 0, None, {str(path)!r})"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                   env=dict(os.environ, PYTHONHASHSEED="123",
                            PYTHONPATH=os.path.join(REPO, "site_scons")))
    assert path.read_bytes() == resnet_bytes


def test_write_only_when_changed(tmp_path):
    path = tmp_path / "sub" / "dir" / "m.onnx"
    assert zoo.write("simplecnn", 0, (1, 1, 28, 28), str(path))
    os.utime(path, (1, 1))
    assert not zoo.write("simplecnn", 0, None, str(path))  # None = the default shape, same bytes
    assert os.stat(path).st_mtime == 1
    assert zoo.write("simplecnn", 7, None, str(path))
    assert os.stat(path).st_mtime != 1
    assert os.listdir(path.parent) == ["m.onnx"]


@pytest.mark.parametrize("name,shape", [("resnet18", (1, 3, 16, 224)), ("resnet18", (1, 1, 224, 224)),
                                        ("resnet18", (2, 3, 224, 224)), ("simplecnn", (1, 784))])
def test_bad_input_shape(name, shape):
    with pytest.raises(ValueError, match="input_shape"):
        zoo.build(name, 0, shape)


def test_unknown_model():
    with pytest.raises(ValueError, match="resnet18, resnet50, resnet8, simplecnn"):
        zoo.build("vgg", 0)


def test_mobilenetv1_width_and_resolution():
    model = zoo.build("mobilenetv1_025", 0, (1, 3, 64, 96))
    onnx.checker.check_model(model, full_check=True)
    y = run(model.SerializeToString(), (1, 3, 64, 96))
    assert y.shape == (1, 1000) and np.isfinite(y).all()
    ops = Counter(n.op_type for n in model.graph.node)
    assert (ops["Conv"], ops["BatchNormalization"], ops["Clip"], ops["Gemm"]) == (27, 27, 27, 1)
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    groups = [next((a.i for a in n.attribute if a.name == "group"), 1) for n in convs]
    assert sum(g > 1 for g in groups) == 13                         # the depthwise convs
    widths = {name: zoo.build(name, 0).graph.initializer for name in ("mobilenetv1_075",)}
    fc = [i for i in widths["mobilenetv1_075"] if i.name == "fc.weight"][0]
    assert list(fc.dims) == [1000, 768]                             # 1024 * 0.75
    assert zoo.build("mobilenetv1_075", 0).SerializeToString(deterministic=True) == \
        zoo.build("mobilenetv1_075", 0).SerializeToString(deterministic=True)


def test_generators_are_imported_when_their_model_is_used():
    """The manifest reads the zoo's names on every call: that imports no generator module
    (models/zoo/__init__.py's lazy ZOO); the entries are the generators all the same."""
    code = ("import sys; sys.path.insert(0, 'site_scons'); sys.path.insert(0, '.')\n"
            "from models import zoo\n"
            "names = list(zoo.ZOO); assert 'resnet18' in zoo.ZOO and 'vgg' not in zoo.ZOO\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('models.zoo.'))\n"
            "assert loaded == [], loaded\n"
            "assert zoo.ZOO['resnet18'] is sys.modules['models.zoo.resnet18']\n"
            "from models.zoo import mobilenetv1\n"
            "assert tuple(mobilenetv1.VARIANTS) == zoo.MOBILENETV1\n"
            "assert all(zoo.ZOO[n] is mobilenetv1.VARIANTS[n] for n in zoo.MOBILENETV1)\n")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


@pytest.mark.parametrize("name", ["simplecnn", "mobilenetv2", "tcn", "encdec"])
def test_weights_handed_over_are_the_initializers(name, tmp_path):
    """build_with_weights: the arrays the importer takes instead of decoding the proto hold
    exactly every float initializer's values, read-only; the import gives the same IR."""
    from onnx import numpy_helper

    from nnscons.frontends import load_model
    model, weights = zoo.build_with_weights(name, 0)
    floats = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT]
    # every weight the Builder wrote (Clip bounds made by helper are decoded as before)
    assert weights and set(weights) <= {i.name for i in floats}
    assert all(i.name in weights for i in floats if len(i.dims) > 1)
    for init in (i for i in floats if i.name in weights):
        a = weights[init.name]
        assert not a.flags.writeable
        assert a.dtype == np.float32 and np.array_equal(a, numpy_helper.to_array(init))
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    handed = load_model(str(path), name=name, generated=model, weights=weights)
    read = load_model(str(path), name=name)
    for a, b in zip(handed.layers, read.layers):
        assert a.name == b.name
        for field in ("weight", "weight_scale", "bias"):
            x, y = getattr(a, field), getattr(b, field)
            assert (x is None and y is None) or np.array_equal(x, y)
    assert [t.q for t in handed.tensors.values()] == [t.q for t in read.tensors.values()]
