"""The floor below the op registry's modules, the frontends and the passes: the pre-IR graph
(Op, OpGraph), the ONNX attribute and operand readers, the QOperator helper, the shape
checks, the TFLite operand helpers and the layout conversions the op modules share.
Nothing here imports ops, frontends or passes (tests/test_import_cycles.py checks it, with
ops/__init__.py counted as importing every op module it loads)."""
