"""Reading a firmware run log, writing output.npy, and the layer-by-layer check.

Every target's program prints one line per layer, in execution order:
    layer <index> <cname>: OK
    layer <index> <cname>: MISMATCH <bad>/<total> elements, max |diff| <d>, first at <k> (...)
and finally `Test PASSED` or `Test FAILED: ...`. A platform that can count what a layer
did (an emulator) may add `measure <index> key=value ...` lines; they go to report.json.
"""
from __future__ import annotations

import io
import re

import numpy as np

from ...fileio import write_if_changed

_LAYER = re.compile(r"^layer (\d+) (\S+): (OK|MISMATCH (\d+)/(\d+) elements.*)$")
_MEASURE = re.compile(r"^measure (\d+) (.*)$")


def parse(text: str) -> dict:
    layers, measured = {}, {}
    for line in text.splitlines():
        mm = _MEASURE.match(line.strip())
        if mm:
            measured[int(mm.group(1))] = {k: int(v) for k, v in
                                          (kv.split("=", 1) for kv in mm.group(2).split()) if v.isdigit()}
            continue
        m = _LAYER.match(line.strip())
        if m:
            layers[int(m.group(1))] = {
                "cname": m.group(2), "ok": m.group(3) == "OK",
                "mismatches": int(m.group(4) or 0), "detail": m.group(3)}
    return {"layers": layers, "measured": measured, "passed": "Test PASSED" in text.splitlines()}


def write_output(session, output_bin: str, output_npy: str) -> None:
    """Dequantize the program's int8 output into float32 in the model's layout: output.npy,
    or for several outputs (output_npy is then output.npz) one array per output name, cut
    from the packed buffer in the model's order."""
    from ...opkit.layout import model_output
    from ...reference import dequantize
    from ...tensor_layout import from_layout
    g = session.graph
    data = np.fromfile(output_bin, dtype=np.int8)
    arrays, offset = {}, 0
    for name in g.outputs:
        tensor = g.tensor(name)
        size = int(np.prod(tensor.shape))
        q = from_layout(data[offset:offset + size], tensor.shape, session.plan.layout,
                        session.plan.tensor_layouts.get(name))
        offset += size
        real = dequantize(tensor, q)
        extra = ((getattr(g, "model_layout", None) or {}).get("outputs") or {}).get(name)
        real = model_output(g, real) if name == g.output else real.reshape(extra or real.shape)
        arrays[name] = real.astype(np.float32)
    buf = io.BytesIO()
    if len(g.outputs) == 1:
        np.save(buf, arrays[g.output], allow_pickle=False)
    else:
        np.savez(buf, **arrays)
    write_if_changed(output_npy, buf.getvalue())


def check(session, log_text: str) -> tuple[bool, str, str | None]:
    """(passed, message, name of the first wrong layer or None). The message names the
    first wrong layer by its model name."""
    result = parse(log_text)
    layers = session.plan.layers
    target = session.target_cfg.name
    for i, lp in enumerate(layers):
        entry = result["layers"].get(i)
        if entry is None:
            return False, (f"CHECK FAILED [{target}] {session.model_cfg.name}: the run log has no result "
                           f"for layer #{i} '{lp.layer.name}'; the program stopped early (see run.log)"), \
                lp.layer.name
        if not entry["ok"]:
            wrong = sum(1 for e in result["layers"].values() if not e["ok"])
            return False, (f"CHECK FAILED [{target}] {session.model_cfg.name}: first wrong layer "
                           f"#{i} '{lp.layer.name}' ({lp.layer.op}): {entry['mismatches']} mismatching "
                           f"element(s) -- {entry['detail']}; {wrong} layer(s) wrong in total"), lp.layer.name
    if not result["passed"]:
        return False, (f"CHECK FAILED [{target}] {session.model_cfg.name}: the program did not print "
                       f"'Test PASSED'"), None
    what = "the 1 layer matches" if len(layers) == 1 else f"all {len(layers)} layers match"
    sliced = sum(1 for lp in layers if lp.report.get("slice"))
    if sliced:      # layers run on a slice of their output channels (gap9 layer by layer)
        what += f" ({sliced} of them on a slice of their output channels)"
    return True, (f"Test PASSED [{target}] {session.model_cfg.name}: {what} "
                  f"the integer reference bit for bit"), None
