"""No copied blocks among the templates, the C kernels and the Python package (issue 27: one
place per concern).  A block is N consecutive identical non-trivial lines (whitespace folded;
blank lines, lone braces, `{% endif %}`-like tags, comment openers, `return;`, imports and
lines shorter than 8 characters skipped), found in two files or at two places in one file.

ALLOWED names the pairs of files (the same file twice: two places in it) that may share a
block, each with why; a new pair fails, and so does an allowed pair that no longer shares one
(remove it).  N per tree is chosen so that today's tree holds only the listed pairs: a longer
copy than these is one more place to edit for one change.  Reads about 330 files in well
under a second (no timing here: a test never times things).
"""
from __future__ import annotations

import collections
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_TRIVIAL = re.compile(r"^([{}()\[\];,]*|\{%-?\s*(end\w*|else)\s*-?%\}|#\s*(endif|else)\b.*|/\*|\*/|\*"
                      r"|//.*|\"\"\"|return;|break;|else\s*\{?|\}\s*else\s*\{?|pass|from .*|import .*)$")

# (glob under the checkout, N, {(file, file): why})
TREES = {
    "templates": ("templates/**/*.j2", 6, {
        ("templates/gap9/_window.j2", "templates/gap9/_window.j2"):
            "the first tile's setup (load input, params, the channel-tile loop) is written for the "
            "single-buffered and the double-buffered schedule; a macro would hide which DMA waits "
            "each one has",
        ("templates/gap9/global_avgpool.c.j2", "templates/gap9/island_avgpool.c.j2"):
            "the same L1 setup and channel-tile loop around two different kernels (a whole-map "
            "mean and an island mean); to merge with a shared macro in _layer.j2",
        ("templates/aie2p/nns.c.j2", "templates/k210/nns.c.j2"):
            "the arena offsets of the network's inputs and outputs in two library APIs; to move "
            "onto the shared network template family (issue 27.2)",
    }),
    "kernels": ("kernels/**/*.c", 6, {
        ("kernels/gap9/nn_xp_dwconv.c", "kernels/gap9/nn_xp_dwconv.c"):
            "inline-asm inner loops unrolled per tap count: the compiler does not unroll asm",
        ("kernels/gap9/nn_xp_conv2d.c", "kernels/gap9/nn_xp_conv2d.c"):
            "the core split (pixels x channel blocks) is recomputed in the cost search and in the "
            "chosen split; both must stay the same arithmetic",
        ("kernels/host/nn_simd.c", "kernels/host/nn_simd.c"):
            "the same lane loop per ISA (AVX-512 VNNI, AVX2, NEON) under #if: one is compiled",
    }),
    "python": ("site_scons/**/*.py", 8, {
        ("site_scons/nnscons/kernelgen/isa_x86.py", "site_scons/nnscons/kernelgen/isa_x86.py"):
            "the accumulator loops of the AVX2 and AVX-512 micro-kernels",
        ("site_scons/nnscons/targets/arm64/tool.py", "site_scons/nnscons/targets/cortex_m/tool.py"):
            "the opening of a cross-compiling kind's SCons Tool.generate (gcc, as, gnulink, ar, "
            "the toolchain's cc): SCons' own tool list, one line each",
    }),
}


def _lines(path: str) -> list:
    out = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            s = " ".join(raw.split())
            if len(s) >= 8 and not _TRIVIAL.match(s):
                out.append(s)
    return out


def shared_blocks(pattern: str, n: int, root: str = ROOT) -> dict:
    """{(file, file): number of N-line windows they share}; (f, f): two places in one file."""
    seen = collections.defaultdict(set)
    for path in sorted(glob.glob(os.path.join(root, pattern), recursive=True)):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        lines = _lines(path)
        for k in range(len(lines) - n + 1):
            seen[tuple(lines[k:k + n])].add((rel, k))
    pairs = collections.Counter()
    for where in seen.values():
        if len(where) > 1:
            files = sorted({f for f, _ in where})
            for i, a in enumerate(files):
                for b in files[i + 1:] if len(files) > 1 else files:
                    pairs[(a, b)] += 1
    return dict(pairs)


@pytest.mark.parametrize("tree", sorted(TREES))
def test_no_copied_blocks_beyond_the_listed_pairs(tree):
    pattern, n, allowed = TREES[tree]
    found = shared_blocks(pattern, n)
    new = sorted(p for p in found if p not in allowed)
    assert not new, (f"{tree}: blocks of {n}+ identical lines in two places (move the shared part into "
                     f"one template macro / function, or list the pair in ALLOWED with why):\n"
                     + "\n".join(f"    {a} <-> {b} ({found[(a, b)]} windows)" for a, b in new))
    gone = sorted(p for p in allowed if p not in found)
    assert not gone, f"{tree}: allowed pairs no longer share a block: remove them: {gone}"


def test_the_finder_sees_a_copy_across_files_and_inside_one(tmp_path):
    block = [f"int v{i} = f(x, {i}) + g(y);" for i in range(6)]
    (tmp_path / "a.c").write_text("\n".join(block + ["int other_line = 1;"]) + "\n")
    (tmp_path / "b.c").write_text("\n".join(["{", "}"] + block) + "\n")
    (tmp_path / "c.c").write_text("\n".join(block[:5] + ["int unique = 2;"] + block + ["}"]) + "\n")
    found = shared_blocks("*.c", 6, str(tmp_path))
    assert set(found) == {("a.c", "b.c"), ("a.c", "c.c"), ("b.c", "c.c")}
    (tmp_path / "d.c").write_text("\n".join(block + ["int mid = 0;"] + block) + "\n")
    assert ("d.c", "d.c") in shared_blocks("d.c", 6, str(tmp_path))
