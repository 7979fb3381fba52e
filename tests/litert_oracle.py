"""LiteRT as the oracle for .tflite models: the reference (BUILTIN_REF) kernels.

    run_litert(model, inputs, all_tensors=False) -> (outputs, tensors or None)

model: the .tflite bytes or a path.  inputs: one numpy array per subgraph input, in the
model's own dtype (int8/uint8 quantized, or float32 for models that start with QUANTIZE).
outputs: one array per subgraph output (copies).  all_tensors=True also returns
{tensor name: array} of every tensor after the run (constants included), with the
interpreter's experimental_preserve_all_tensors so intermediate buffers are not reused.

Importing this module never fails: HAVE_LITERT says whether ai_edge_litert is there and
SKIP_REASON is the pytest skip message, e.g.

    pytestmark = pytest.mark.skipif(not HAVE_LITERT, reason=SKIP_REASON)
"""
from __future__ import annotations

import os

import numpy as np

try:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    HAVE_LITERT = True
    SKIP_REASON = ""
except Exception as e:  # ImportError, or a broken binary wheel
    Interpreter = OpResolverType = None
    HAVE_LITERT = False
    SKIP_REASON = f"ai_edge_litert is not available ({type(e).__name__}: {e})"


def make_interpreter(model, all_tensors=False):
    """An allocated Interpreter on the reference kernels for model bytes or a path."""
    if not HAVE_LITERT:
        raise RuntimeError(SKIP_REASON)
    kwargs = dict(experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                  experimental_preserve_all_tensors=bool(all_tensors), num_threads=1)
    if isinstance(model, (bytes, bytearray, memoryview)):
        interp = Interpreter(model_content=bytes(model), **kwargs)
    else:
        interp = Interpreter(model_path=os.fspath(model), **kwargs)
    interp.allocate_tensors()
    return interp


def run_litert(model, inputs, all_tensors=False):
    """Run once; return (list of output arrays, {tensor name: array} or None)."""
    interp = make_interpreter(model, all_tensors)
    details = interp.get_input_details()
    inputs = list(inputs)
    if len(inputs) != len(details):
        raise ValueError(f"model has {len(details)} inputs, {len(inputs)} given")
    for d, x in zip(details, inputs):
        x = np.asarray(x)
        if x.dtype != d["dtype"]:
            raise TypeError(f"input {d['name']!r} is {np.dtype(d['dtype']).name}, "
                            f"got {x.dtype.name}")
        if tuple(x.shape) != tuple(d["shape"]):
            raise ValueError(f"input {d['name']!r} has shape {tuple(d['shape'])}, "
                             f"got {tuple(x.shape)}")
        interp.set_tensor(d["index"], np.ascontiguousarray(x))
    interp.invoke()
    outputs = [np.array(interp.get_tensor(d["index"])) for d in interp.get_output_details()]
    tensors = None
    if all_tensors:
        tensors = {}
        for d in interp.get_tensor_details():
            try:
                tensors[d["name"]] = np.array(interp.get_tensor(d["index"]))
            except ValueError:  # a tensor without data (e.g. an omitted optional one)
                pass
    return outputs, tensors
