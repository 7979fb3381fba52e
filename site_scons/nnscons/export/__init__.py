"""Exports of the IR: a QDQ ONNX model (qdq_onnx) and the onnxruntime oracle (ort_oracle)."""
