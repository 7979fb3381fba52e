"""Reports: report.json and the per-layer table, report.html, the matrix summary, fidelity to
the float model and self-consistency of quantized.onnx."""
