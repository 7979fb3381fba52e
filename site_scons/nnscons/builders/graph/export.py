"""The standalone export: build/<t>/<m>/[<platform>/]export/, a folder a firmware team copies
into its repository and builds there without nnscons or Python.

It holds what the library is made of -- the generated sources, the kernel sources the plan
uses and the headers they include (copied with their license headers), the weights .bin the
.S files embed (or the files a gap9 application flashes), the public header -- and its build
files: a plain Makefile (`make` builds lib/libnns_<m>.a with the target's compiler and
flags), a CMakeLists.txt (target nns_<m>, alias nns::<m>), for a cross compiler a CMake
toolchain file, and the target's SDK form: gap_sdk.mk (gap9 kinds), a GAP SDK application
Makefile's fragment, and kendryte_sdk.cmake (k210), a CMake fragment for a Kendryte standalone
SDK project.  Every file is its own node, copied only when its source changed, so a
one-layer edit rewrites that layer's files and nothing else.
"""
from __future__ import annotations

import os
import re
import shlex

import SCons.Action

from ...fileio import write_if_changed
from ...resources import data_path
from . import actions
from .deps import py_sources

KERNELS = data_path("kernels")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# what stands in for the GAP SDK on the other gap9 platforms (the PMSIS emulation, the qemu
# and pulp-open bare-metal runtimes): never in gap_sdk.mk
GAP9_STAND_INS = ("kernels/gap9/emul", "kernels/gap9/open", "kernels/gap9/qemu")
GAP_SDK_KINDS = ("gap9", "pulp-open")       # kinds on gap9's code: a gap_sdk.mk beside the Makefile
# k210: the KPU HAL on the board (the real registers, through the SDK's sysctl) and the
# emulator's, which the emul/qemu archives hold instead
K210_BOARD_HAL = "kernels/k210/kpu_board.c"
K210_EMUL_HAL = "kernels/k210/kpu_emul.c"
K210_HARNESS_DEFINES = ("-DNN_BIN_DIR",)       # qemu's harness reads its .bin from the cwd
# the compiler's own flags (-march, -mabi, --specs, -pthread ...) are the SDK's business: a
# fragment keeps optimisation, warnings, the C dialect and debug info
_SDK_FLAG = re.compile(r"^-(O\S*|W(?![al],)(?!error$)\S+|std=\S+|g\S*)$")


def _under(name: str, folders) -> bool:
    return any(name == f or name.startswith(f + "/") for f in folders)


def _in(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)


def _copy_file(src: str, dest: str) -> None:
    """src's bytes to dest, written (atomically) only when they differ: a vendored copy's
    diff stays small."""
    with open(src, "rb") as f:
        write_if_changed(dest, f.read())


def _copy(target, source, env):
    _copy_file(str(source[0]), str(target[0]))
    return 0


def include_dirs(env, build_dir: str, vendor_dirs=None) -> list:
    """(absolute folder, folder in the export) of each include path the library compiles
    with: the build's src/ and include/, the project's kernel folders, a vendored library's
    (vendor_dirs: {folder: its name in the export}); others (an SDK's) as they are."""
    out = []
    vendor_dirs = {os.path.abspath(k): v for k, v in (vendor_dirs or {}).items()}
    for d in env.Flatten([env.get("CPPPATH", [])]):
        d = os.path.abspath(env.subst(str(d)))
        if d in vendor_dirs:
            out.append((d, vendor_dirs[d]))
        elif _in(d, KERNELS):
            out.append((d, "kernels/" + os.path.relpath(d, KERNELS)))
        elif _in(d, build_dir):
            out.append((d, os.path.relpath(d, build_dir)))
        else:
            out.append((d, d))
    return out


def _exported_name(path: str, build_dir: str) -> str:
    path = os.path.abspath(path)
    if _in(path, KERNELS):
        return "kernels/" + os.path.relpath(path, KERNELS)
    return os.path.relpath(path, build_dir)


def _headers(sources: list, dirs: list, build_dir: str) -> dict:
    """{export name: absolute path} of the project's headers the sources include, followed
    through the headers themselves (those on the build's or the kernels' include paths; an
    SDK's headers stay the SDK's)."""
    found, todo = {}, list(sources)
    while todo:
        src = todo.pop()
        try:
            with open(src, encoding="utf-8", errors="replace") as f:
                names = INCLUDE.findall(f.read())
        except OSError:
            continue
        for name in names:
            for d in [os.path.dirname(src)] + [a for a, _ in dirs]:
                cand = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(cand):
                    if _in(cand, KERNELS) or _in(cand, build_dir):
                        key = _exported_name(cand, build_dir)
                        if key not in found:
                            found[key] = cand
                            todo.append(cand)
                    break
    return found


def _flags(env, build_dir: str) -> dict:
    """The library's compile flags without the build's paths: CFLAGS (no -Werror: a vendored
    copy meets other compilers), defines, the assembler's (the weights on -Wa,-Iweights)."""
    cflags = [f for f in env.subst("$CFLAGS $CCFLAGS").split() if f != "-Werror"]
    defines = []
    raw = env.get("CPPDEFINES", [])
    items = raw.items() if isinstance(raw, dict) else (raw if isinstance(raw, (list, tuple)) else [raw])
    for d in items:
        if isinstance(d, dict):
            defines += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in d.items()]
        elif isinstance(d, (tuple, list)):
            defines.append(f"-D{d[0]}={d[1]}" if len(d) > 1 and d[1] is not None else f"-D{d[0]}")
        else:
            defines.append(f"-D{d}")
    asflags = []
    for f in env.subst("$ASPPFLAGS").split():
        if f.startswith("-Wa,-I"):
            continue                   # the build's bin/weights: the export's weights/
        asflags.append(f)
    return {"cflags": cflags, "defines": defines, "asflags": asflags + ["-Wa,-Iweights"],
            "cc": env.subst("$CC"), "ar": env.subst("$AR")}


def declare(env, session, lib_files: dict, generated: list, kernel_sources: list, weights: list) -> list:
    """The export's nodes.  lib_files: library.files(...) of the archive; generated: the
    generated .c/.S nodes compiled into it (paths under the build folder); kernel_sources:
    the kernel .c files (absolute); weights: the .bin nodes."""
    b = os.path.abspath(session.build_dir)
    lib_dir = os.path.dirname(lib_files["lib"])
    out_dir = os.path.join(session.build_dir, os.path.dirname(lib_dir), "export")
    model = os.path.basename(lib_files["lib"])[len("libnns_"):-len(".a")]
    # a third-party library the plan's layers call, carried in the export (cortex-m:
    # CMSIS-NN's used sources, its and CMSIS Core's headers, their licenses)
    vendor = session.plan.extra.get("export_vendor") or {"files": [], "dirs": {}}
    dirs = include_dirs(env, b, vendor["dirs"])
    flags = _flags(env, b)
    copy = SCons.Action.Action(_copy, actions.label)
    nodes, sources = [], []

    def put(name, src, verb_label):
        node = env.Command(os.path.join(out_dir, name), src, copy, NNS_VERB="EXPORT", NNS_LABEL=verb_label)
        nodes.extend(node)
        return node

    header = os.path.join(session.build_dir, lib_files["header"])
    put(lib_files["header"], header, os.path.basename(header))
    for n in generated:
        rel = os.path.relpath(os.path.abspath(str(n)), b)
        put(rel, n, rel)
        sources.append(rel)
    for k in kernel_sources:
        name = _exported_name(k, b)
        put(name, k, name)
        sources.append(name)
    for w in weights:
        name = "weights/" + os.path.basename(str(w))
        put(name, w, name)
    for src, name in vendor["files"]:
        put(name, src, name)
        if name.endswith(".c"):
            sources.append(name)
    kind = getattr(session.target_cfg, "kind", "")
    sdk, scan = None, []
    if kind in GAP_SDK_KINDS:
        sdk = {"file": "gap_sdk.mk", "sources": sorted(x for x in sources if not _under(x, GAP9_STAND_INS)),
               "include": sorted({e for _, e in dirs if not os.path.isabs(e) and not _under(e, GAP9_STAND_INS)}
                                 | {"include", "src"}),
               "defines": [f"-D{d}" for d in session.plan.extra.get("sdk_defines", [])]
               or [d for d in flags["defines"] if not d.startswith("-DNN_EMUL")],
               "cflags": [x for x in flags["cflags"] if _SDK_FLAG.match(x)]}
    elif kind == "k210":
        hal = os.path.join(KERNELS, "k210", "kpu_board.c")
        if K210_BOARD_HAL not in sources:
            put(K210_BOARD_HAL, hal, K210_BOARD_HAL)
        scan = [hal]
        sdk = {"file": "kendryte_sdk.cmake",
               "sources": sorted({K210_BOARD_HAL if x == K210_EMUL_HAL else x for x in sources}),
               "include": sorted({e for _, e in dirs if not os.path.isabs(e)} | {"include", "src"}),
               "defines": [d for d in flags["defines"] if not d.startswith(K210_HARNESS_DEFINES)],
               "cflags": [x for x in flags["cflags"] if _SDK_FLAG.match(x)]}
    # headers: from the kernel sources now, and from the generated sources when they exist
    spec = {"sdk": sdk, "model": model, "sources": sorted(sources), "flags": flags,
            "include": sorted({e for _, e in dirs} | {"include", "src"}),
            "weights": sorted(os.path.basename(str(w)) for w in weights),
            "link_libs": list(session.plan.extra.get("link_libs", [])),
            "target": session.target_cfg.name}
    build_files = env.Command(
        [os.path.join(out_dir, "Makefile"), os.path.join(out_dir, "CMakeLists.txt"),
         os.path.join(out_dir, "toolchain.cmake")] + ([os.path.join(out_dir, sdk["file"])] if sdk else []),
        [env.Value(repr(sorted(spec.items())))] + list(generated) + list(kernel_sources) + scan,
        SCons.Action.Action(lambda target, source, env: _write_build_files(target, spec, dirs, b,
                                                                           [str(s) for s in source[1:]]),
                            actions.label),
        NNS_VERB="EXPORT", NNS_LABEL="Makefile, CMakeLists.txt, toolchain.cmake" + (f", {sdk['file']}" if sdk else ""))
    env.Depends(build_files, py_sources("builders/graph/export.py"))
    nodes.extend(build_files)
    return nodes


def _cmake_string(text: str) -> str:
    """text as one quoted CMake argument (the defines are written for a shell, as SCons's:
    shlex reads them back first)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _write_build_files(target, spec, dirs, build_dir, sources) -> int:
    out = os.path.dirname(str(target[0]))
    # the headers the sources include, copied beside them (written only when changed)
    headers = _headers([os.path.abspath(s) for s in sources], dirs, build_dir)
    for name, path in sorted(headers.items()):
        if name.startswith("include/"):
            continue                       # the public header: its own node
        _copy_file(path, os.path.join(out, name))
    m = spec["model"]
    objs = [f"obj/{os.path.splitext(s)[0]}.o" for s in spec["sources"]]
    inc = spec["include"]
    f = spec["flags"]
    mk = [f"# Generated by nnscons for target '{spec['target']}'. Do not edit.",
          f"# `make` builds lib/libnns_{m}.a from this folder alone (no nnscons, no Python);",
          "# CC, AR, CFLAGS and CPPFLAGS may be given on the command line.",
          f"CC = {f['cc']}",
          f"AR = {f['ar']}",
          "CFLAGS = " + " ".join(f["cflags"]),
          "CPPFLAGS = " + " ".join([f"-I{d}" for d in inc] + f["defines"]),
          "ASFLAGS = " + " ".join(f["asflags"]),
          "OBJS = \\", *[f"\t{o} \\" for o in objs], "",
          f"lib/libnns_{m}.a: $(OBJS)",
          "\t@mkdir -p lib",
          "\trm -f $@",
          "\t$(AR) rcs $@ $(OBJS)",
          "",
          "obj/%.o: %.c",
          "\t@mkdir -p $(dir $@)",
          "\t$(CC) $(CFLAGS) $(CPPFLAGS) -MMD -MP -c $< -o $@",
          "",
          "obj/%.o: %.S",
          "\t@mkdir -p $(dir $@)",
          "\t$(CC) $(CFLAGS) $(CPPFLAGS) $(ASFLAGS) -c $< -o $@",
          ""]
    for s in spec["sources"]:   # a weights .S embeds its .bin: rebuilt when the .bin changes
        if s.startswith("src/weights/") and s.endswith(".S"):
            stem = os.path.splitext(os.path.basename(s))[0]
            mk.append(f"obj/{os.path.splitext(s)[0]}.o: weights/{stem}.bin")
    mk += ["", "clean:", "\trm -rf obj lib", "", ".PHONY: clean", "", "-include $(OBJS:.o=.d)", ""]
    write_if_changed(str(target[0]), "\n".join(mk))
    libs = " ".join(spec["link_libs"])
    cm = [f"# Generated by nnscons for target '{spec['target']}'. Do not edit.",
          f"# add_subdirectory(<this folder>) then target_link_libraries(app nns::{m}).",
          "cmake_minimum_required(VERSION 3.13)",
          f"project(nns_{m} C ASM)",
          f"add_library(nns_{m} STATIC",
          *[f"    {s}" for s in spec["sources"]],
          ")",
          f"add_library(nns::{m} ALIAS nns_{m})",
          f"target_include_directories(nns_{m} PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}}/include",
          "    PRIVATE " + " ".join(f"${{CMAKE_CURRENT_SOURCE_DIR}}/{d}" for d in inc if d != "include") + ")",
          f"target_compile_definitions(nns_{m} PRIVATE " + " ".join(
              _cmake_string(shlex.split(d)[0][2:]) for d in f["defines"]) + ")"
          if f["defines"] else "",
          f"target_compile_options(nns_{m} PRIVATE " + " ".join(f["cflags"]) + ")",
          f"set(NNS_{m.upper()}_ASFLAGS \"" + " ".join(a.replace("-Wa,-Iweights", "-Wa,-I${CMAKE_CURRENT_SOURCE_DIR}/weights")
                                                    for a in f["asflags"]) + "\")",
          "foreach(s " + " ".join(s for s in spec["sources"] if s.endswith(".S")) + ")",
          f"    set_source_files_properties(${{s}} PROPERTIES COMPILE_FLAGS \"${{NNS_{m.upper()}_ASFLAGS}}\")",
          "endforeach()" if any(s.endswith(".S") for s in spec["sources"]) else "endforeach()",
          f"target_link_libraries(nns_{m} INTERFACE {libs})" if libs else "",
          ""]
    write_if_changed(str(target[1]), "\n".join(line for line in cm if line is not None))
    cc = f["cc"]
    cross = os.path.basename(cc) not in ("gcc", "cc", "clang")
    tc = [f"# Generated by nnscons for target '{spec['target']}'. Do not edit.",
          "# cmake -DCMAKE_TOOLCHAIN_FILE=<this file>: the compiler the export was built and tested with.",
          *([f"set(CMAKE_SYSTEM_NAME {'Linux' if 'linux' in cc else 'Generic'})",
             "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)"] if cross else []),
          f"set(CMAKE_C_COMPILER {cc})",
          f"set(CMAKE_ASM_COMPILER {cc})",
          f"set(CMAKE_AR {f['ar']})" if cross else "",
          ""]
    write_if_changed(str(target[2]), "\n".join(tc))
    if spec.get("sdk"):
        text = (_gap_sdk_mk if spec["sdk"]["file"] == "gap_sdk.mk" else _kendryte_sdk_cmake)(spec)
        write_if_changed(str(target[3]), text)
    return 0


def _gap_sdk_mk(spec) -> str:
    """gap_sdk.mk: `include <export>/gap_sdk.mk` in a GAP SDK application Makefile (before
    pmsis_rules.mk) adds the library's sources, include folders, defines and its readfs files
    (the weights the library's open() loads), with paths from the fragment's own folder.  The
    sources are the ones a real GAP9 build compiles (the gvsoc platform's): the application
    brings PMSIS, so no emulation or bare-metal runtime is listed."""
    sdk, m = spec["sdk"], spec["model"]
    v = f"NNS_{m.upper()}_DIR"
    lines = [f"# Generated by nnscons for target '{spec['target']}'. Do not edit.",
             "# In a GAP SDK application Makefile, before `include $(RULES_DIR)/pmsis_rules.mk`:",
             "#     include <this folder>/gap_sdk.mk",
             f"# adds libnns_{m}'s sources to APP_SRCS, its folders to APP_INC, its defines and flags",
             "# to APP_CFLAGS and its weights (the readfs files its open() loads) to READFS_FILES.",
             f"{v} := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))",
             "",
             *[f"APP_SRCS += $({v})/{x}" for x in sdk["sources"]],
             "",
             *[f"APP_INC += $({v})/{d}" for d in sdk["include"]],
             "",
             "APP_CFLAGS += " + " ".join(sdk["cflags"] + sdk["defines"]),
             "",
             *[f"READFS_FILES += $({v})/weights/{w}" for w in spec["weights"]],
             ""]
    return "\n".join(lines)


def _kendryte_sdk_cmake(spec) -> str:
    """kendryte_sdk.cmake: `include(<export>/kendryte_sdk.cmake)` in a Kendryte standalone SDK
    project (after the SDK's cmake/common.cmake, which sets the compiler, -march/-mabi and the
    SDK's include folders) defines the static library nns_<m> (alias nns::<m>) from the
    export's sources with the board's KPU HAL (kpu_board.c; the emulator is not in it), the
    weights' .S files assembled with -Wa,-I<export>/weights; target_link_libraries(<app>
    nns_<m>) then links it into the SDK's application."""
    sdk, m = spec["sdk"], spec["model"]
    v = f"NNS_{m.upper()}_DIR"
    lines = [f"# Generated by nnscons for target '{spec['target']}'. Do not edit.",
             "# In a Kendryte standalone SDK project, after include(${SDK}/cmake/common.cmake):",
             "#     include(<this folder>/kendryte_sdk.cmake)",
             f"#     target_link_libraries(<app> nns_{m})",
             f"# nns_{m}: the network on the board's KPU (kernels/k210/kpu_board.c, which includes the",
             "# SDK's sysctl.h: the SDK's lib/drivers/include must be on the include path, as the SDK's",
             "# own projects have it: header_directories(${SDK_ROOT}/lib)).",
             f'set({v} "${{CMAKE_CURRENT_LIST_DIR}}")',
             f"add_library(nns_{m} STATIC",
             *[f"    ${{{v}}}/{x}" for x in sdk["sources"]],
             ")",
             f"if(NOT TARGET nns::{m})",
             f"    add_library(nns::{m} ALIAS nns_{m})",
             "endif()",
             f"target_include_directories(nns_{m} PUBLIC ${{{v}}}/include",
             "    PRIVATE " + " ".join(f"${{{v}}}/{d}" for d in sdk["include"] if d != "include") + ")"]
    if sdk["defines"]:
        lines.append(f"target_compile_definitions(nns_{m} PRIVATE "
                     + " ".join(_cmake_string(shlex.split(d)[0][2:]) for d in sdk["defines"]) + ")")
    if sdk["cflags"]:
        lines.append(f"target_compile_options(nns_{m} PRIVATE " + " ".join(sdk["cflags"]) + ")")
    asm = [x for x in sdk["sources"] if x.endswith(".S")]
    if asm:
        # the SDK's flags (-march, -mabi) are C's only: the .S objects get them too, else the
        # link mixes float ABIs ("can't link double-float modules with single-float modules")
        lines += ['string(REGEX MATCHALL "-m(arch|abi|cmodel)=[^ ]+" _nns_target_flags "${CMAKE_C_FLAGS}")',
                  'string(REPLACE ";" " " _nns_target_flags "${_nns_target_flags}")',
                  "set_source_files_properties(" + " ".join(f"${{{v}}}/{x}" for x in asm),
                  f'    PROPERTIES COMPILE_FLAGS "${{_nns_target_flags}} -Wa,-I${{{v}}}/weights")']
    lines.append("")
    return "\n".join(lines)
