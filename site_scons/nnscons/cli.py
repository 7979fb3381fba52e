"""The `nnscons` console command: `./nnscons` for an installed package.

Run in a folder holding a targets.yaml; arguments are those of ./nnscons (target=,
model=, platform=, input=, verbose=, aliases, -j, -c, -h ...).  SCons runs with the
package's front-end SConstruct, in this folder, and writes only under build/.
"""
from __future__ import annotations

import os
import sys


def is_matrix(args) -> bool:
    """target=/model= lists or all, or shard=: every combination builds even if one fails."""
    for a in args:
        key, _, value = a.partition("=")
        if key == "shard" or key in ("target", "model") and ("," in value or "all" in value.split(",")):
            return True
    return False


def is_verbose(args) -> bool:
    """verbose= set to one of SCons's true values (BoolVariable's spellings)."""
    return any(a.lower() in {f"verbose={v}" for v in ("1", "y", "yes", "t", "true", "on", "all")} for a in args)


def main(argv=None) -> int:
    sys.dont_write_bytecode = True          # nothing outside build/: no bytecode caches
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["merge"]:                # nnscons merge OUT.json SHARD.json ...
        from .builders.reports import matrix
        return matrix.main(args)
    sconstruct = os.path.join(os.path.dirname(os.path.abspath(__file__)), "builders", "SConstruct")
    if not os.path.isfile("targets.yaml") and not any(a in ("-h", "--help", "-H") for a in args):
        sys.stderr.write(f"nnscons: error: no targets.yaml in {os.getcwd()}; run nnscons in the folder "
                         f"holding the manifest (see README: The manifest)\n")
        return 2
    import SCons.Script
    if is_matrix(args):
        args = ["-k", *args]
    if not is_verbose(args):
        args = ["-Q", *args]        # no `scons: Reading SConscript files ...` around the steps
    sys.argv = ["nnscons", "-f", sconstruct, *args]
    try:
        SCons.Script.main()
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
