"""The project's KPU word packing (targets/k210/kpu.py) against the Kendryte SDK's own kpu.h,
compiled with the host C compiler: every field of kpu_layer_argument_t (and of the batch-norm
and activation tables) is set to all ones through the SDK's real bit fields, and the 64-bit
words must equal what kpu.py packs for that field at its largest value -- position and width,
bit for bit. The SDK comes from KENDRYTE_SDK or the tarball in ../shared/kendryte (only its
headers are unpacked, into the test's temporary folder)."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tarfile

import pytest

from conftest import ROOT
from nnscons.targets.k210 import kpu

TARBALLS = sorted(glob.glob(os.path.join(os.path.dirname(ROOT), "shared", "kendryte",
                                         "kendryte-standalone-sdk-*.tar.xz")))
SDK_ENV = os.environ.get("KENDRYTE_SDK", "")
pytestmark = [pytest.mark.skipif(not (SDK_ENV or TARBALLS) or not shutil.which("gcc"),
                                 reason="needs the Kendryte SDK (KENDRYTE_SDK or ../shared/kendryte) and gcc"),
              pytest.mark.xdist_group("k210-sdk-include")]   # the module's fixture (compiled or built once) on one worker


@pytest.fixture(scope="module")
def sdk_include(tmp_path_factory):
    """lib/drivers/include and lib/bsp/include of the SDK."""
    if SDK_ENV:
        root = SDK_ENV
    else:
        dst = tmp_path_factory.mktemp("kpu_h")
        with tarfile.open(TARBALLS[-1]) as tar:
            members = [m for m in tar.getmembers() if "/lib/drivers/include/" in m.name or "/lib/bsp/include/" in m.name]
            tar.extractall(dst, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        root = str(dst / "kendryte-standalone-sdk")
    return [os.path.join(root, "lib", "drivers", "include"), os.path.join(root, "lib", "bsp", "include")]


def run_c(tmp_path, includes, body) -> list:
    """Compile and run a main() body with kpu.h; its stdout lines, split."""
    src = tmp_path / "probe.c"
    src.write_text('#include <stdio.h>\n#include <string.h>\n#include <stddef.h>\n#include "kpu.h"\n'
                   "static void words(const void *p, size_t n) {\n"
                   "    const unsigned long long *w = p;\n"
                   "    for (size_t i = 0; i < n / 8; ++i) printf(\"%llx \", w[i]);\n"
                   "    printf(\"\\n\");\n}\n"
                   f"int main(void) {{\n{body}\n    return 0;\n}}\n")
    exe = str(tmp_path / "probe")
    subprocess.run(["gcc", "-std=gnu11", "-w", *[f"-I{i}" for i in includes], str(src), "-o", exe], check=True)
    out = subprocess.run([exe], stdout=subprocess.PIPE, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def test_every_layer_argument_field_matches_the_sdk_bit_fields(sdk_include, tmp_path):
    body = ["    kpu_layer_argument_t a;", '    printf("%zu\\n", sizeof a);']
    for w, name, _, _ in kpu.FIELDS:
        body += ["    memset(&a, 0, sizeof a);", f"    a.{kpu.WORD_NAMES[w]}.data.{name} = ~0ull;",
                 "    words(&a, sizeof a);"]
    out = run_c(tmp_path, sdk_include, "\n".join(body))
    assert out[0] == [str(kpu.NUM_WORDS * 8)]
    assert len(kpu.FIELDS) == 45
    wrong = []
    for (w, name, lo, width), line in zip(kpu.FIELDS, out[1:]):
        sdk = [int(x, 16) for x in line]
        ours = kpu.pack_words({name: -1 if name in kpu.SIGNED else (1 << width) - 1})
        if sdk != ours:
            wrong.append((name, [hex(v) for v in sdk], [hex(v) for v in ours]))
    assert not wrong, wrong


def test_batchnorm_and_activation_tables_match_the_sdk(sdk_include, tmp_path):
    body = """
    kpu_batchnorm_argument_t b;
    memset(&b, 0, sizeof b); b.batchnorm.data.norm_mul = ~0ull; words(&b, sizeof b);
    memset(&b, 0, sizeof b); b.batchnorm.data.norm_add = ~0ull; words(&b, sizeof b);
    memset(&b, 0, sizeof b); b.batchnorm.data.norm_shift = ~0ull; words(&b, sizeof b);
    kpu_activate_table_t t;
    printf("%zu %zu %zu\\n", sizeof t, offsetof(kpu_activate_table_t, activate_para_bias0),
           offsetof(kpu_activate_table_t, activate_para_bias1));
    for (int i = 0; i < 16; ++i) {
        memset(&t, 0, sizeof t);
        t.activate_para[i].data.shift_number = 0x12; t.activate_para[i].data.y_mul = 0xBEEF;
        t.activate_para[i].data.x_start = 0x876543210ull;
        if (i < 8) t.activate_para_bias0.data.result_bias[i] = (unsigned char)(0xA0 + i);
        else t.activate_para_bias1.data.result_bias[i - 8] = (unsigned char)(0xA0 + i);
        words(&t, sizeof t);
    }"""
    out = run_c(tmp_path, sdk_include, body)
    assert [int(out[i][0], 16) for i in range(3)] == [
        int.from_bytes(kpu.bn_bytes([(1 << 24) - 1], [0], [0]), "little"),
        int.from_bytes(kpu.bn_bytes([0], [0], [-1]), "little"),
        int.from_bytes(kpu.bn_bytes([0], [15], [0]), "little")]
    assert out[3] == [str(kpu.ACT_TABLE_BYTES), "128", "136"]
    x_start = 0x876543210 - (1 << 36)                  # the 36-bit field, signed
    for i in range(16):
        segs = [(0, 0, 0, 0)] * 16
        segs[i] = (x_start, 0xBEEF, 0x12, 0xA0 + i)
        ours = kpu.act_bytes(segs)
        sdk = b"".join(int(v, 16).to_bytes(8, "little") for v in out[4 + i])
        assert sdk == ours, i
