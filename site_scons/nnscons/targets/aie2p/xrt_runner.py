"""platform=npu: run each layer's final.xclbin + insts.bin on the NPU through XRT (pyxrt).

    <toolchain.python> xrt_runner.py <build dir> <output.bin>

Runs under the Python that has XRT's pyxrt (source XRT's setup.sh) and numpy. Per layer:
register the xclbin, load insts.bin (32-bit words) into a cacheable BO, the input,
weights and output into host_only BOs (group ids 3, 4, 5 of kernel MLIR_AIE), launch
with opcode 3, read the output back; the check against the golden is runner.py's.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# binfiles.py (the .bin naming rule, standalone) from the nnscons package folder
sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import numpy as np  # noqa: E402
import host_layers  # noqa: E402
import runner  # noqa: E402
from runner import binfiles  # noqa: E402

KERNEL = "MLIR_AIE"
OPCODE = 3


def main(build_dir: str, output_bin: str) -> int:
    import pyxrt
    device = pyxrt.device(0)
    to_dev = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE
    from_dev = pyxrt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE

    def run_layer(layer, x):
        cname = layer["cname"]
        d = os.path.join(build_dir, "aie", cname)
        with open(os.path.join(build_dir, "src", "layers", cname + "_dma.json")) as f:
            sizes = json.load(f)["dma"]["buffers"]
        xclbin = pyxrt.xclbin(os.path.join(d, "final.xclbin"))
        device.register_xclbin(xclbin)
        context = pyxrt.hw_context(device, xclbin.get_uuid())
        kernel = pyxrt.kernel(context, KERNEL)
        insts = np.fromfile(os.path.join(d, "insts.bin"), dtype=np.uint32)
        bo_insts = pyxrt.bo(device, insts.nbytes, pyxrt.bo.cacheable, kernel.group_id(1))
        bo_insts.write(insts.tobytes(), 0)
        bo_insts.sync(to_dev)
        w = np.fromfile(binfiles.bin_path(build_dir, "weights", cname), dtype=np.uint8)
        bos = []
        for gid, (data, n) in enumerate(((x, sizes["in"]), (w, sizes["w"]), (None, sizes["out"])), 3):
            bo = pyxrt.bo(device, n, pyxrt.bo.host_only, kernel.group_id(gid))
            if data is not None:
                bo.write(np.ascontiguousarray(data).tobytes(), 0)
                bo.sync(to_dev)
            bos.append(bo)
        run = kernel(OPCODE, bo_insts, insts.size, *bos)
        state = run.wait()
        if str(state) not in ("ert_cmd_state.ERT_CMD_STATE_COMPLETED", "ERT_CMD_STATE_COMPLETED"):
            raise RuntimeError(f"layer {cname}: the NPU run ended in state {state}")
        bos[2].sync(from_dev)
        return np.frombuffer(bytes(bos[2].read(sizes["out"], 0)), dtype=np.uint8).copy()

    lines, out = runner.run_network(build_dir, run_layer, host_layers.host_runner(build_dir))
    return runner.finish(build_dir, lines, out, output_bin)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
