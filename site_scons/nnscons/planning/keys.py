"""Content keys that drive early cutoff.

SCons `Value` nodes hold these digests instead of whole tensors, so a node's
signature changes exactly when the data it is built from changes:

* layer_numeric_key(L): everything that changes L's numbers (op, attributes,
  weights, bias, scales, clamp) -- not its tiling or its name.
* golden_keys: the chain hash of a layer's numeric key and the keys of its
  inputs, ending at the input digest; a golden is rebuilt only when its key moves.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np


def digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(str(part.dtype).encode())
            h.update(repr(part.shape).encode())
            h.update(np.ascontiguousarray(part).tobytes())
        elif isinstance(part, (bytes, bytearray)):
            h.update(part)
        else:
            h.update(json.dumps(part, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


def _qp(t):
    return [t.q.scale.hex() if isinstance(t.q.scale, float) else float(t.q.scale).hex(),
            int(t.q.zero_point), list(t.shape)]


def layer_numeric_key(layer, graph) -> str:
    arrays = [a for a in (layer.weight, layer.weight_scale, layer.bias) if a is not None]
    return digest(layer.op, layer.attrs, [_qp(graph.tensor(t)) for t in layer.inputs],
                  _qp(graph.tensor(layer.output)), layer.act_min, layer.act_max, *arrays)


def golden_keys(graph, input_key: str, numeric_keys: dict) -> dict:
    """{tensor name: chain key} for the input and every layer output.
    numeric_keys: {layer name: layer_numeric_key}."""
    keys = {t: input_key for t in graph.inputs}
    for layer in graph.layers:
        keys[layer.output] = digest(numeric_keys[layer.name], [keys[t] for t in layer.inputs])
    return keys
