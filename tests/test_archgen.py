"""Whole architectures as onnxruntime's quantizer writes them (tests/archgen.py: SqueezeNet 1.1,
DenseNet, Inception-v2, ResNet-50-style bottlenecks, ShuffleNetV2) import and match the float64
evaluation of the quantized file within 1 LSB on >= 99% of the outputs (layergen.check's
criterion), in the QDQ int8 per-channel form and the QOperator uint8 per-tensor form.
benchmarks/ort_quantizer_arch.py runs all 12 forms."""
from __future__ import annotations

import pytest

import archgen
import layergen


@pytest.mark.parametrize("arch", archgen.ARCHITECTURES, ids=lambda a: a.__name__)
@pytest.mark.parametrize("variant", layergen.QUICK, ids=layergen.variant_name)
def test_architecture_matches_the_float64_oracle(tmp_path, arch, variant):
    r = layergen.check(layergen.quantized(arch, arch.opsets[0], variant, str(tmp_path)), arch.shape)
    assert r["status"] == "ok", r
    assert r["max"] <= 1, r
