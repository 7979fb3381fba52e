"""A model's own tensor layout against the IR's.

The IR holds 4-D activations as (1, C, H, W) and 2-D ones as (1, F). TFLite models are
channels-last: a rank-4 tensor (1, H, W, C) is (1, C, H, W) inside nnscons, a rank-3 one
(1, L, C) (a 1-D network) is (1, C, 1, L), ranks 1 and 2 keep their elements in order,
(F,) becoming (1, F). The run's input (`input=x.npy`) and `output.npy` stay in the model's
layout: Graph.model_layout records the model's shapes ("channels": "first" for an ONNX
1-D model, whose (1, C, L) is the IR's (1, C, 1, L) by a reshape) and these functions convert.
"""
from __future__ import annotations

import numpy as np


def ir_shape(shape: tuple) -> tuple:
    """The IR shape of a channels-last tensor of the given shape."""
    shape = tuple(int(d) for d in shape)
    if len(shape) == 4:
        n, h, w, c = shape
        return (n, c, h, w)
    if len(shape) == 3:
        n, length, c = shape
        return (n, c, 1, length)
    if len(shape) == 2:
        return shape
    if len(shape) == 1:
        return (1, shape[0])
    if len(shape) == 0:
        return (1, 1)
    raise ValueError(f"rank-{len(shape)} tensors are not supported")


def to_ir(x: np.ndarray, shape: tuple) -> np.ndarray:
    """A channels-last array of the model's shape `shape` in the IR's layout."""
    shape = tuple(shape)
    x = np.asarray(x).reshape(shape)
    if len(shape) == 4:
        return np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    if len(shape) == 3:
        return np.ascontiguousarray(x.transpose(0, 2, 1)[:, :, None, :])
    return x.reshape(ir_shape(shape))


def from_ir(x: np.ndarray, shape: tuple) -> np.ndarray:
    """An IR array back in the model's channels-last shape `shape`."""
    shape = tuple(shape)
    x = np.asarray(x).reshape(ir_shape(shape))
    if len(shape) == 4:
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    if len(shape) == 3:
        return np.ascontiguousarray(x[:, :, 0, :].transpose(0, 2, 1))
    return x.reshape(shape)


def flat_order(shape: tuple) -> np.ndarray:
    """For each element of a channels-last tensor in its own (row-major) order, its flat
    index in the IR layout: the gather that turns IR data into the model's order."""
    n = int(np.prod(shape)) if len(shape) else 1
    return from_ir(np.arange(n).reshape(ir_shape(shape)), shape).reshape(-1)


def _channels_first(lay) -> bool:
    return lay.get("channels") == "first"


def model_input(graph, x: np.ndarray) -> np.ndarray:
    """The run's input in the model's layout -> the IR's (identity for IR-layout models).
    A channels-first model (ONNX's 1-D (1, C, L)) only reshapes: (1, C, 1, L) has the
    same element order."""
    lay = getattr(graph, "model_layout", None)
    if not lay:
        return x
    if _channels_first(lay):
        return np.asarray(x).reshape(graph.tensor(graph.input).shape)
    return to_ir(x, lay["input"])


def model_output(graph, x: np.ndarray) -> np.ndarray:
    lay = getattr(graph, "model_layout", None)
    if not lay:
        return x
    if _channels_first(lay):
        return np.asarray(x).reshape(lay["output"])
    return from_ir(x, lay["output"])


def model_input_shape(graph) -> tuple:
    lay = getattr(graph, "model_layout", None)
    return tuple(lay["input"]) if lay else tuple(graph.tensor(graph.input).shape)


def model_output_shape(graph) -> tuple:
    lay = getattr(graph, "model_layout", None)
    return tuple(lay["output"]) if lay else tuple(graph.tensor(graph.output).shape)


def model_layout_name(lay, rank: int, ir_name: str) -> str:
    """The name of a model's own layout for a tensor of that model rank (the header's
    comments, run_float's index order): NHWC/NLC for channels-last models, NCL for a
    channels-first 1-D one, else the IR's."""
    if not lay:
        return ir_name
    if _channels_first(lay):
        return "NCL" if rank == 3 else ir_name
    return {4: "NHWC", 3: "NLC"}.get(rank, ir_name)
