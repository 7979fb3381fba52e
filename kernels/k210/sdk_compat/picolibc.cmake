# nnscons K210 SDK compatibility layer: the Kendryte standalone SDK built with Debian's
# riscv64-unknown-elf-gcc (gcc >= 12) and picolibc instead of the Kendryte toolchain and its
# newlib. Included by the generated board/CMakeLists.txt after the SDK's cmake/common.cmake
# (which set the SDK's flags and link rule) when nnscons found Debian's toolchain
# (-DNNS_SDK_COMPAT=picolibc). It changes flags only; no SDK file is patched.
#
# - gcc >= 12 splits the CSR and fence.i instructions out of the base ISA: rv64imafc becomes
#   rv64imafc_zicsr_zifencei (the same ISA the SDK's gcc 8 calls rv64imafc);
# - picolibc's headers and libc through its specs file (the SDK links `gcc m c`);
# - the crt objects (crti/crtbegin/crtend/crtn) of the lp64f multilib: toolchain.cmake asks
#   the compiler without -march/-mabi and gets the default (lp64d) ones, which do not link with
#   single-float objects;
# - the headers the SDK expects of newlib (sdk_compat/include: machine/syscall.h; the lock
#   API for iomem.c) and the glue picolibc needs (picolibc_glue.c: stdout through the SDK's sys_putchar, _exit);
# - picolibc's heap symbols are the SDK linker script's.
set(NNS_SDK_COMPAT_DIR ${CMAKE_CURRENT_LIST_DIR})
set(NNS_MARCH -march=rv64imafc_zicsr_zifencei -mabi=lp64f)
foreach (flags CMAKE_C_FLAGS CMAKE_CXX_FLAGS)
    string(REPLACE "-march=rv64imafc " "-march=rv64imafc_zicsr_zifencei " ${flags} "${${flags}} ")
    global_set(${flags} "${${flags}} --specs=picolibc.specs -isystem ${NNS_SDK_COMPAT_DIR}/include")
endforeach ()
foreach (crt CRTI CRTBEGIN CRTEND CRTN)
    string(TOLOWER ${crt} _name)
    execute_process(COMMAND ${CMAKE_C_COMPILER} ${NNS_MARCH} -print-file-name=${_name}.o
                    OUTPUT_STRIP_TRAILING_WHITESPACE OUTPUT_VARIABLE ${crt}_OBJ)
endforeach ()
global_set(CMAKE_C_LINK_EXECUTABLE
        "<CMAKE_C_COMPILER>  <FLAGS> <CMAKE_C_LINK_FLAGS> <LINK_FLAGS> \"${CRTI_OBJ}\" \"${CRTBEGIN_OBJ}\" <OBJECTS> \"${CRTEND_OBJ}\" \"${CRTN_OBJ}\" -o <TARGET> <LINK_LIBRARIES>")
add_compile_flags(LD -Wl,--defsym=__heap_start=_heap_start -Wl,--defsym=__heap_end=_heap_end)
set(NNS_SDK_COMPAT_SOURCES ${NNS_SDK_COMPAT_DIR}/picolibc_glue.c)
set(NNS_SDK_COMPAT_IOMEM_FLAGS "-include ${NNS_SDK_COMPAT_DIR}/include/nns_sdk_lock.h")
