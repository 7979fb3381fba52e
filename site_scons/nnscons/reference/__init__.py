"""Bit-exact NumPy INT8 reference: the golden model every target is checked against.

The arithmetic is the one documented in nnscons.numerics; each op family lives in its
own module (conv.py, pool.py, eltwise.py) and runner.py dispatches layers to them.
"""
from .quant import dequantize, quantize_input
from .runner import run_graph, run_layer

__all__ = ["run_graph", "run_layer", "quantize_input", "dequantize"]
