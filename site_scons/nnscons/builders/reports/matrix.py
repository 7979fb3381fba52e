"""Matrix builds: several targets x models in one SCons graph, one summary.

`target=` and `model=` take comma-separated names and `all`; every combination is one set
of nodes, so -j overlaps them.  A combination that cannot be planned (an op a target
lacks, a model that does not fit) becomes a node that fails with its reason, so the others
build on (keep-going) and the exit status says something failed.  At the end: a table,
build/matrix.json and build/matrix.csv (per combination: platform, status, first wrong layer,
MACs, parameter bytes, one column per memory figure, latency or cycles where known, build and
run seconds; the wall time in matrix.json and the summary line).
`shard=i/n` keeps the i-th of n deterministic slices; `merge` joins shards' matrix.json.
"""
from __future__ import annotations

import csv
import io
import json
import os
import sys
from dataclasses import dataclass, field

from ...errors import UserError
from ...fileio import write_if_changed

MATRIX_JSON = os.path.join("build", "matrix.json")
MATRIX_CSV = os.path.join("build", "matrix.csv")
# the report's memory figures, one column each (a target reports those it has): host's
# activation arena, gap9/pulp-open's peak L2 and L3, k210's SRAM in use
MEMORY = ("activation_arena_bytes", "peak_l2_bytes", "l3_bytes", "sram_used_bytes")
COLUMNS = ("target", "model", "platform", "status", "first_wrong_layer", "reason", "macs", "param_bytes",
           *MEMORY, "latency_ms", "cycles", "build_s", "run_s")
# what the time columns mean (stated on matrix.html)
TIME_NOTE = ("build s: from the combination's first step to its last in this invocation (with -j the "
             "combinations overlap, so these add up to more than the wall time); run s: from its RUN step "
             "to its REPORT; 0 when nothing ran")


def names(arg: str, declared, what: str) -> list:
    """target=/model= values: comma-separated names, `all` (every declared one)."""
    items = [a.strip() for a in arg.split(",")] if arg else [""]
    if "all" in items:
        return list(declared)
    if "" in items and len(items) > 1:
        raise UserError(f"{what}={arg}: empty name in the list")
    return list(dict.fromkeys(items))


def shard(combos: list, spec: str) -> list:
    """The i-th of n slices (1-based) of the combinations, round robin over their sorted order."""
    try:
        i, n = (int(v) for v in spec.split("/"))
    except ValueError:
        raise UserError(f"shard={spec}: expected i/n with 1 <= i <= n, e.g. shard=2/4") from None
    if not 1 <= i <= n:
        raise UserError(f"shard={spec}: expected i/n with 1 <= i <= n, e.g. shard=2/4")
    return [c for k, c in enumerate(sorted(combos)) if k % n == i - 1]


@dataclass
class Combination:
    target: str
    model: str
    session: object = None               # None when planning failed
    reason: str = ""                      # why planning failed
    aliases: dict = field(default_factory=dict)
    out_dir: str = ""                     # where report.json goes


def timings(combos: list) -> dict:
    """Per combination, the seconds between its first and last step of this build ('build')
    and from its run step to its report ('run'), as each session's step printer recorded
    them (builders/graph/network.py); recording never touches a node's signature."""
    out = {}
    for c in combos:
        if c.session is None or not c.session.step_times:
            continue
        times = c.session.step_times
        stamps = [t for _, t in times]
        run = [t for verb, t in times if verb == "RUN"]
        report = [t for verb, t in times if verb == "REPORT"]
        out[(c.target, c.model)] = {"build": max(stamps) - min(stamps),
                                    "run": (report[-1] - run[0]) if run and report else 0.0}
    return out


def _row(c: Combination, failures: dict, timings: dict) -> dict:
    row = {k: None for k in COLUMNS}
    row.update(target=c.target, model=c.model)
    if c.session is None:
        row.update(status="not planned", reason=c.reason)
        return row
    row["platform"] = c.session.options["run"]["platform"]
    rep_path = os.path.join(c.out_dir, "report.json")
    rep = None
    if os.path.isfile(rep_path):
        with open(rep_path, encoding="utf-8") as f:
            rep = json.load(f)
    failed = failures.get((c.target, c.model))
    if rep is not None:
        row.update(macs=rep.get("total_macs"), param_bytes=rep.get("total_param_bytes"),
                   first_wrong_layer=rep.get("first_wrong_layer"))
        row.update({k: rep.get(k) for k in MEMORY})
        row["latency_ms"] = rep.get("latency_ms")
        row["cycles"] = rep.get("total_cycles")
    if failed:
        row.update(status="failed", reason=failed)
    elif rep is not None and rep.get("passed"):
        row["status"] = "passed"
    elif rep is not None:
        row.update(status="failed", reason=rep.get("verdict"))
    elif c.aliases.get("image") and all(n.exists() for n in c.aliases["image"]):
        row.update(status="image built", reason="a board image, not run (the flash alias runs it)")
    else:
        row.update(status="not built")
    t = timings.get((c.target, c.model), {})
    row["build_s"] = round(t.get("build", 0.0), 3)
    row["run_s"] = round(t.get("run", 0.0), 3)
    return row


def summarize(combos: list, failures: dict, timings: dict) -> list:
    return [_row(c, failures, timings) for c in combos]


def write(rows: list, json_path: str = MATRIX_JSON, csv_path: str = MATRIX_CSV, wall_s=None) -> None:
    """matrix.json ({"combinations": rows, "wall_s": the invocation's seconds, None after a
    merge}) and matrix.csv (one flat row per combination, COLUMNS)."""
    write_if_changed(json_path, json.dumps({"combinations": rows, "wall_s": wall_s}, indent=2,
                                           sort_keys=True) + "\n")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k) for k in COLUMNS})
    write_if_changed(csv_path, buf.getvalue())


def table(rows: list, wall_s=None) -> str:
    head = ("target", "model", "platform", "status", "MACs", "params B", "latency ms", "cycles",
            "build s", "run s", "first wrong layer / reason")
    lines = [head]
    for r in rows:
        detail = r["first_wrong_layer"] or (r["reason"] or "")
        lines.append((r["target"], r["model"], r["platform"] or "-", r["status"],
                      f"{r['macs']:,}" if r["macs"] is not None else "-",
                      f"{r['param_bytes']:,}" if r["param_bytes"] is not None else "-",
                      str(r["latency_ms"]) if r["latency_ms"] is not None else "-",
                      f"{r['cycles']:,}" if r["cycles"] is not None else "-",
                      str(r["build_s"] if r["build_s"] is not None else "-"),
                      str(r["run_s"] if r["run_s"] is not None else "-"),
                      detail.splitlines()[0][:90] if detail else ""))
    widths = [max(len(str(x[i])) for x in lines) for i in range(len(head))]
    text = ["  ".join(str(c).ljust(w) for c, w in zip(x, widths)).rstrip() for x in lines]
    passed = sum(r["status"] == "passed" for r in rows)
    wall = f" in {wall_s:.1f} s wall time" if wall_s is not None else ""
    text.append(f"matrix: {passed} of {len(rows)} combination(s) passed{wall} ({MATRIX_JSON}, {MATRIX_CSV})")
    return "\n".join(text)


def merge(out_path: str, inputs: list) -> list:
    """Join shards' matrix.json files (a combination in several: the last one wins)."""
    rows = {}
    for path in inputs:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            for r in data["combinations"]:
                rows[(r["target"], r["model"])] = r
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UserError(f"{path}: not a matrix.json written by nnscons ({e})") from None
    merged = [rows[k] for k in sorted(rows)]
    base = os.path.splitext(out_path)[0]
    write(merged, out_path, base + ".csv")
    return merged


def main(argv=None) -> int:
    """`./nnscons merge OUT.json IN.json...` (or python -m nnscons.builders.reports.matrix merge ...)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["merge"]:
        args = args[1:]
    if len(args) < 2:
        sys.stderr.write("usage: nnscons merge OUT.json SHARD.json [SHARD.json ...]\n")
        return 2
    try:
        rows = merge(args[0], args[1:])
    except UserError as e:
        sys.stderr.write(f"nnscons: error: {e}\n")
        return 2
    print(table(rows).replace(MATRIX_JSON, args[0]).replace(MATRIX_CSV, os.path.splitext(args[0])[0] + ".csv"))
    return 0 if all(r["status"] == "passed" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
