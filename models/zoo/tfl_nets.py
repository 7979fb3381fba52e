"""tfl_*: four MLPerf Tiny networks as int8 .tflite flatbuffers, written without TensorFlow.

    NETS[name].build(seed) -> bytes        (also NETS[name](seed))
    build(name, seed=0) -> bytes
    write(name, seed, path) -> bool        writes only if the bytes changed
    sample(name, seed=0) -> (x_q, x_f, y_f) the first calibration sample: its quantized
                                            input (the model's dtype), float input and the
                                            float network's output on it

    tfl_dscnn            keyword spotting DS-CNN, input (1, 49, 10, 1)
    tfl_resnet8          CIFAR-10 ResNet-8, input (1, 32, 32, 3)
    tfl_mobilenetv1_025  visual wake words MobileNet-v1 alpha 0.25, input (1, 96, 96, 3)
    tfl_autoencoder      anomaly-detection dense autoencoder, input (1, 640)

Weights are random (He-normal), then each conv/FC gets a data-dependent folded
"batch norm" (per output channel: divide by the pre-activation's std over a calibration
batch, random gain and shift), so activations stay in a realistic range as a trained
network's would.  The whole network runs in float (numpy, NHWC) on a seeded calibration
batch; every activation's int8 (scale, zero point) comes from its min/max (asymmetric,
zero in range), as the TFLite converter's calibration sets them.  Weights are per-channel
symmetric int8 (quantized_dimension 0 for CONV_2D/FULLY_CONNECTED, 3 for
DEPTHWISE_CONV_2D), biases int32 with scale in_scale * w_scale[c].  AVERAGE_POOL_2D and
RESHAPE keep their input's parameters (LiteRT's int8 kernels do not requantize);
SOFTMAX's output is (1/256, -128) as LiteRT requires.  Same seed -> byte-identical model.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

CALIBRATION_BATCH = 4        # images / spectrograms per calibration batch
AE_CALIBRATION_BATCH = 32    # feature vectors for the autoencoder (per-channel FC stats)


def _writer_module():
    try:
        from nnscons.frontends import tflite_writer
    except ImportError:  # site_scons not on sys.path (run outside scons/pytest)
        import sys
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sys.path.insert(0, os.path.join(root, "site_scons"))
        from nnscons.frontends import tflite_writer
    return tflite_writer


# ---- float NHWC forward ------------------------------------------------------------------
def _same_pads(size, k, s, d=1):
    ke = (k - 1) * d + 1
    out = -(-size // s)
    total = max((out - 1) * s + ke - size, 0)
    return total // 2, total - total // 2


def _patches(x, kh, kw, stride, padding):
    """(N, Ho, Wo, kh, kw, C) windows of NHWC x, TF padding rules."""
    if padding == "SAME":
        ph, pw = _same_pads(x.shape[1], kh, stride), _same_pads(x.shape[2], kw, stride)
        x = np.pad(x, ((0, 0), ph, pw, (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))
    win = win[:, ::stride, ::stride]                      # (N, Ho, Wo, C, kh, kw)
    return win.transpose(0, 1, 2, 4, 5, 3)


def conv2d_f(x, w, stride=1, padding="SAME"):
    """x NHWC, w OHWI -> NHWC (no bias)."""
    o, kh, kw, c = w.shape
    p = _patches(x, kh, kw, stride, padding)
    n, ho, wo = p.shape[:3]
    return (p.reshape(n * ho * wo, kh * kw * c) @ w.reshape(o, -1).T).reshape(n, ho, wo, o)


def depthwise_f(x, w, stride=1, padding="SAME"):
    """x NHWC, w 1HWC (depth multiplier 1) -> NHWC (no bias)."""
    _, kh, kw, c = w.shape
    p = _patches(x, kh, kw, stride, padding)
    return np.einsum("nhwijc,ijc->nhwc", p, w[0], optimize=True)


def _act(y, act):
    if act == "RELU":
        return np.maximum(y, 0.0)
    if act == "RELU6":
        return np.clip(y, 0.0, 6.0)
    if act == "NONE":
        return y
    raise ValueError(act)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---- network recorder: float forward + int8 tflite, layer by layer ------------------------
@dataclass
class _V:
    t: object          # the writer's Tensor
    f: np.ndarray      # float values over the calibration batch


class _Net:
    def __init__(self, name, seed, x_float):
        self.tw = _writer_module()
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.b = self.tw.TfliteWriter()
        self.x_float = x_float
        scale, zp = self._qparams(x_float)
        self.input = _V(self.b.input("input", (1,) + x_float.shape[1:], scale, zp), x_float)

    def _qparams(self, f):
        return self.tw.qparams_from_range(float(f.min()), float(f.max()))

    def _shape(self, f):
        return (1,) + f.shape[1:]

    def _fold(self, z, cout, gain, shift, offset=0.0):
        """Per-channel multiplier and bias of a folded batch norm scaling z to unit RMS
        (not mean-centred: centring on a small batch makes ill-conditioned layers)."""
        axes = tuple(range(z.ndim - 1))
        rms = np.maximum(np.sqrt(np.mean(z * z, axis=axes)), 1e-3)
        g = gain * self.rng.uniform(0.7, 1.3, cout) / rms
        bias = offset + shift * self.rng.normal(0.0, 1.0, cout)
        return g, bias

    def _emit(self, opname, name, x, w, bias, qdim, y, options):
        tw = self.tw
        wq, ws = tw.quantize_per_channel(w, qdim)
        in_scale = x.t.scale[0]
        wt = self.b.const(f"{name}/weights", wq, scale=ws, zero_point=0, quantized_dimension=qdim)
        bt = self.b.const(f"{name}/bias", tw.bias_int32(bias, in_scale, ws),
                          scale=in_scale * ws.astype(np.float64), zero_point=0)
        scale, zp = self._qparams(y)
        t = self.b.op(opname, [x.t, wt, bt], name, self._shape(y), scale, zp, options=options)
        return _V(t, y)

    def conv(self, name, x, cout, k, stride=1, act="RELU", padding="SAME", gain=1.0, shift=0.3):
        kh, kw = (k, k) if isinstance(k, int) else k
        cin = x.f.shape[-1]
        w = self.rng.normal(0.0, np.sqrt(2.0 / (kh * kw * cin)), (cout, kh, kw, cin))
        z = conv2d_f(x.f, w, stride, padding)
        g, bias = self._fold(z, cout, gain, shift)
        w = w * g[:, None, None, None]
        y = _act(z * g + bias, act)
        return self._emit("CONV_2D", name, x, w, bias, 0, y, dict(
            padding=padding, stride_w=stride, stride_h=stride, fused_activation_function=act))

    def dwconv(self, name, x, k=3, stride=1, act="RELU", padding="SAME", gain=1.0, shift=0.3):
        c = x.f.shape[-1]
        w = self.rng.normal(0.0, np.sqrt(2.0 / (k * k)), (1, k, k, c))
        z = depthwise_f(x.f, w, stride, padding)
        g, bias = self._fold(z, c, gain, shift)
        w = w * g
        y = _act(z * g + bias, act)
        return self._emit("DEPTHWISE_CONV_2D", name, x, w, bias, 3, y, dict(
            padding=padding, stride_w=stride, stride_h=stride, depth_multiplier=1,
            fused_activation_function=act))

    def fc(self, name, x, cout, act="RELU", gain=1.0, shift=0.3, offset=0.0):
        cin = x.f.shape[-1]
        w = self.rng.normal(0.0, np.sqrt(2.0 / cin), (cout, cin))
        z = x.f @ w.T
        g, bias = self._fold(z, cout, gain, shift, offset)
        w = w * g[:, None]
        y = _act(z * g + bias, act)
        return self._emit("FULLY_CONNECTED", name, x, w, bias, 0, y,
                          dict(fused_activation_function=act))

    def add(self, name, a, c, act="RELU"):
        y = _act(a.f + c.f, act)
        scale, zp = self._qparams(y)
        t = self.b.op("ADD", [a.t, c.t], name, self._shape(y), scale, zp,
                      options=dict(fused_activation_function=act))
        return _V(t, y)

    def global_avgpool(self, name, x):
        _, h, w, _ = x.f.shape
        y = x.f.mean(axis=(1, 2), keepdims=True)
        t = self.b.op("AVERAGE_POOL_2D", [x.t], name, self._shape(y), x.t.scale, x.t.zero_point,
                      options=dict(padding="VALID", filter_width=w, filter_height=h))
        return _V(t, y)

    def flatten(self, name, x):
        y = x.f.reshape(x.f.shape[0], -1)
        shape = self.b.const(f"{name}/shape", np.array([1, y.shape[1]], dtype=np.int32))
        t = self.b.op("RESHAPE", [x.t, shape], name, self._shape(y), x.t.scale, x.t.zero_point,
                      options=dict(new_shape=[1, y.shape[1]]))
        return _V(t, y)

    def softmax(self, name, x):
        y = _softmax(x.f)
        t = self.b.op("SOFTMAX", [x.t], name, self._shape(y), 1.0 / 256.0, -128,
                      options=dict(beta=1.0))
        return _V(t, y)

    def finish(self, out):
        self.b.output(out.t)
        self.output = out
        return self.b.finish(description=f"nnscons {self.name} (random weights, int8)")


# ---- the four networks ---------------------------------------------------------------------
def _dscnn(seed):
    rng = np.random.default_rng([seed, 1])
    n = _Net("tfl_dscnn", seed, rng.normal(0.0, 1.0, (CALIBRATION_BATCH, 49, 10, 1)))
    x = n.conv("conv1", n.input, 64, (10, 4), stride=2)
    for i in range(4):
        x = n.dwconv(f"block{i}/dw", x)
        x = n.conv(f"block{i}/pw", x, 64, 1)
    x = n.global_avgpool("avgpool", x)
    x = n.flatten("flatten", x)
    x = n.fc("fc", x, 12, act="NONE", gain=2.0, shift=0.5)
    return n, n.softmax("softmax", x)


def _resnet8(seed):
    rng = np.random.default_rng([seed, 2])
    n = _Net("tfl_resnet8", seed, rng.uniform(0.0, 1.0, (CALIBRATION_BATCH, 32, 32, 3)))
    x = n.conv("conv1", n.input, 16, 3)
    for stage, (c, s) in enumerate(((16, 1), (32, 2), (64, 2))):
        p = f"stack{stage + 1}"
        y = n.conv(f"{p}/conv1", x, c, 3, stride=s)
        y = n.conv(f"{p}/conv2", y, c, 3, act="NONE", gain=0.7)
        short = x if s == 1 else n.conv(f"{p}/shortcut", x, c, 1, stride=s, act="NONE", gain=0.7)
        x = n.add(f"{p}/add", y, short)
    x = n.global_avgpool("avgpool", x)
    x = n.flatten("flatten", x)
    x = n.fc("fc", x, 10, act="NONE", gain=2.0, shift=0.5)
    return n, n.softmax("softmax", x)


MOBILENET_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1),
                    (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def _mobilenetv1_025(seed):
    rng = np.random.default_rng([seed, 3])
    n = _Net("tfl_mobilenetv1_025", seed, rng.uniform(0.0, 1.0, (CALIBRATION_BATCH, 96, 96, 3)))
    x = n.conv("conv1", n.input, 8, 3, stride=2, act="RELU6")
    for i, (c, s) in enumerate(MOBILENET_BLOCKS):
        x = n.dwconv(f"block{i + 1}/dw", x, stride=s, act="RELU6")
        x = n.conv(f"block{i + 1}/pw", x, c // 4, 1, act="RELU6")
    x = n.global_avgpool("avgpool", x)
    x = n.flatten("flatten", x)
    x = n.fc("fc", x, 2, act="NONE", gain=2.0, shift=0.5)
    return n, n.softmax("softmax", x)


def _autoencoder(seed):
    rng = np.random.default_rng([seed, 4])
    n = _Net("tfl_autoencoder", seed, rng.normal(0.0, 1.0, (AE_CALIBRATION_BATCH, 640)))
    x = n.input
    for i, c in enumerate((128, 128, 128, 128, 8, 128, 128, 128, 128)):
        x = n.fc(f"dense{i + 1}", x, c, offset=0.5 if c == 8 else 0.0)  # no dead bottleneck
    return n, n.fc("dense10", x, 640, act="NONE", shift=0.2)


@dataclass(frozen=True)
class TflNet:
    name: str
    make: object
    input_shape: tuple
    doc: str

    def build(self, seed: int = 0) -> bytes:
        n, out = self.make(seed)
        return n.finish(out)

    __call__ = build

    def sample(self, seed: int = 0):
        """(quantized input, float input, float output) of calibration sample 0."""
        n, out = self.make(seed)
        x_f = n.x_float[:1]
        t = n.input.t
        x_q = n.tw.quantize_per_tensor(x_f, t.scale[0], t.zero_point[0], t.dtype)
        return x_q, x_f.astype(np.float32), out.f[:1].astype(np.float32)


NETS = {
    "tfl_dscnn": TflNet("tfl_dscnn", _dscnn, (1, 49, 10, 1), "MLPerf Tiny KWS DS-CNN"),
    "tfl_resnet8": TflNet("tfl_resnet8", _resnet8, (1, 32, 32, 3), "MLPerf Tiny IC ResNet-8"),
    "tfl_mobilenetv1_025": TflNet("tfl_mobilenetv1_025", _mobilenetv1_025, (1, 96, 96, 3),
                                  "MLPerf Tiny VWW MobileNet-v1 0.25"),
    "tfl_autoencoder": TflNet("tfl_autoencoder", _autoencoder, (1, 640),
                              "MLPerf Tiny AD dense autoencoder"),
}


def _net(name):
    if name not in NETS:
        raise ValueError(f"unknown tflite zoo model {name!r}; expected one of: {', '.join(sorted(NETS))}")
    return NETS[name]


def build(name: str, seed: int = 0) -> bytes:
    return _net(name).build(seed)


def sample(name: str, seed: int = 0):
    return _net(name).sample(seed)


def write(name: str, seed: int, path) -> bool:
    """Write the model's .tflite to path unless the file already holds these bytes
    (atomically). Returns True if the file was (re)written."""
    data = build(name, seed)               # also puts nnscons on the path (_writer_module)
    from nnscons.fileio import write_if_changed
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return write_if_changed(path, data)
