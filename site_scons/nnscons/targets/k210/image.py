"""What a K210 board image holds and where it fits: board/image.json ({"board_image": ...,
"summary_lines": the IMAGE lines}, merged into report.json when the board is flashed).

Read from the linked ELF (section headers, the SDK linker script's _end/_heap_start/_heap_end
symbols) and the plan: the image (code, read-only data with the KPU parameters and the
embedded .bin files, data) and the stacks and heap in the 6 MiB general SRAM
(0x80000000-0x805fffff, kendryte.ld's `ram`); the KPU's maps in the 2 MiB AI RAM
(0x80600000, uncached 0x40600000), used at run time only. A heap too small for the arena the
harness allocates is a build error (the board would fail at its first malloc)."""
from __future__ import annotations

import json
import os
import struct

from ...fileio import write_if_changed

SRAM_BASE = 0x80000000
SHF_ALLOC = 0x2
SHT_NOBITS = 8
SHT_SYMTAB = 2


def _sections(data: bytes) -> tuple:
    """([(name, type, flags, addr, size)], {symbol: value}) of a little-endian ELF64 file."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = raw[shstrndx]

    def name(off, table):
        start = table[4] + off
        return data[start:data.index(b"\0", start)].decode()
    secs = [(name(s[0], names), s[1], s[2], s[3], s[5]) for s in raw]
    syms = {}
    for s in raw:
        if s[1] != SHT_SYMTAB:
            continue
        strtab = raw[s[6]]
        for off in range(s[4], s[4] + s[5], 24):
            st_name, _, _, _, value, _ = struct.unpack_from("<IBBHQQ", data, off)
            if st_name:
                syms[name(st_name, strtab)] = value
    return secs, syms


def summarize(elf_path: str, bin_path: str, info: dict) -> dict:
    with open(elf_path, "rb") as f:
        secs, syms = _sections(f.read())
    alloc = [s for s in secs if s[2] & SHF_ALLOC and s[4]]
    group = {"text": 0, "rodata": 0, "data": 0, "bss": 0}
    for name, typ, flags, _, size in alloc:
        key = ("bss" if typ == SHT_NOBITS else "text" if flags & 0x4 else
               "rodata" if not flags & 0x1 else "data")
        group[key] += size
    end, heap_start, heap_end = syms["_end"], syms["_heap_start"], syms["_heap_end"]
    sram = info["sram"]
    bins = sum(os.path.getsize(p) for p in info["bin_files"])
    return {
        "bin_bytes": os.path.getsize(bin_path),
        "sections": group,
        "contents": {"kpu_and_cpu_parameters": info["params"], "embedded_bins": bins,
                     "embedded": info["bins"], "goldens_embedded": info["goldens"],
                     "code_and_other_data": group["text"] + group["rodata"] + group["data"] - info["params"] - bins},
        "sram": {"base": f"{SRAM_BASE:#x}", "bytes": sram, "image_end": f"{end:#x}", "image_bytes": end - SRAM_BASE,
                 "stacks_bytes": heap_start - end, "heap_bytes": heap_end - heap_start,
                 "heap_needed_bytes": info["heap"]},
        "ai_ram": {"bytes": info["ai_ram"], "peak_bytes": info["ai_ram_peak"]},
    }


def lines(s: dict, name: str) -> list:
    sr, c = s["sram"], s["contents"]
    return [f"IMAGE {name}: firmware.bin {s['bin_bytes']:,} B; SRAM {sr['image_bytes']:,} B image "
            f"(text {s['sections']['text']:,} + rodata {s['sections']['rodata']:,} + data {s['sections']['data']:,}"
            f" + bss {s['sections']['bss']:,}) + {sr['stacks_bytes']:,} B stacks, heap {sr['heap_bytes']:,} B free "
            f"for {sr['heap_needed_bytes']:,} B needed, of {sr['bytes']:,} B",
            f"IMAGE {name}: holds {c['kpu_and_cpu_parameters']:,} B parameters, {c['embedded_bins']:,} B embedded "
            f"({'input + goldens' if c['goldens_embedded'] else 'input only, goldens: none'}), "
            f"{c['code_and_other_data']:,} B code and other data; AI RAM peak {s['ai_ram']['peak_bytes']:,} of "
            f"{s['ai_ram']['bytes']:,} B"]


def write(elf_path: str, bin_path: str, json_path: str, session, info: dict) -> int:
    info = dict(info, bin_files=[os.path.join(session.build_dir, "bin", n + ".bin") for n in info["bins"]])
    s = summarize(elf_path, bin_path, info)
    for line in lines(s, session.model_cfg.name):
        print(line)
    sr = s["sram"]
    if sr["heap_bytes"] < sr["heap_needed_bytes"]:
        print(f"BUILD FAILED [{session.target_cfg.name}] on board: the image ends at {sr['image_end']} and leaves "
              f"{sr['heap_bytes']:,} B of heap in the {sr['bytes']:,} B SRAM, the run needs {sr['heap_needed_bytes']:,} B "
              f"(arena and output); set run.goldens: none or use a smaller model")
        return 1
    # the form of a report extra: report.json of a flashed board run carries it
    write_if_changed(json_path, json.dumps({"board_image": s, "summary_lines": lines(s, session.model_cfg.name)},
                                           indent=1) + "\n")
    return 0
