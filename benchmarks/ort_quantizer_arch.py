"""SqueezeNet 1.1, DenseNet, Inception-v2, ResNet-50-style bottlenecks and ShuffleNetV2 (small,
random weights: tests/archgen.py) as onnxruntime's quantizer writes them in 12 forms (QDQ and
QOperator x uint8/int8 activations and weights x per-channel on/off), against the float64
oracle: per architecture and form, whether nnscons imports it and the share of outputs within
1 LSB, and the largest difference. No CPU dependence (integer reference against float64).

    .venv/bin/python benchmarks/ort_quantizer_arch.py [name ...]
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "site_scons"), ROOT]


def main(names) -> None:
    import archgen
    import layergen
    logging.getLogger().setLevel(logging.ERROR)
    folder = tempfile.mkdtemp()
    print(f"{'architecture':12s} {'form':28s} {'status':9s} {'<=1 LSB %':>9s} {'max LSB':>7s}")
    for arch in archgen.ARCHITECTURES:
        if names and arch.__name__ not in names:
            continue
        for v in layergen.VARIANTS:
            r = layergen.check(layergen.quantized(arch, arch.opsets[0], v, folder), arch.shape)
            within = f"{100 * r['within']:.1f}" if "within" in r else "-"
            print(f"{arch.__name__:12s} {layergen.variant_name(v):28s} {r['status']:9s} {within:>9s} "
                  f"{r.get('max', '-')!s:>7s} {r.get('why', '')[:100]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
