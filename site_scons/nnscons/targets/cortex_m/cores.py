"""The Cortex-M cores the target knows: compiler flags, the qemu machine with that core, its
memories and SysTick clock (a leaf module: the kind's other modules read it)."""

KiB, MiB = 1024, 1024 * 1024
# per core: compiler flags, the qemu machine with that core, its code and data memories
# (origin, bytes): mps2 boards have 4 MiB SSRAM at 0x0 and 4 MiB at 0x20000000, the
# MPS3 AN547 512 KiB ITCM at 0x0 and 512 KiB DTCM at 0x20000000; "hz": the machine's
# processor clock in qemu (SysTick's: 25 MHz on the MPS2 boards, 20 MHz on the AN505, 32 MHz
# on the AN547)
CPUS = {
    "cortex-m3": {"flags": ["-mcpu=cortex-m3", "-mfloat-abi=soft"], "machine": "mps2-an385",
                  "code": (0x0, 4 * MiB), "data": (0x20000000, 4 * MiB), "path": "scalar",
                  "hz": 25_000_000},
    "cortex-m4": {"flags": ["-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
                  "machine": "mps2-an386", "code": (0x0, 4 * MiB), "data": (0x20000000, 4 * MiB),
                  "path": "dsp", "hz": 25_000_000},
    "cortex-m7": {"flags": ["-mcpu=cortex-m7", "-mfpu=fpv5-d16", "-mfloat-abi=hard"],
                  "machine": "mps2-an500", "code": (0x0, 4 * MiB), "data": (0x20000000, 4 * MiB),
                  "path": "dsp", "hz": 25_000_000},
    # AN505 (TrustZone): it boots Secure from the IoTKit's initial SVTOR, 0x10000000, which
    # with bit 28 set is the Secure alias of the 4 MiB SSRAM1 at 0x0; the data goes to the
    # Secure alias of SSRAM2+3 (2 x 2 MiB, 0x28000000); with the SAU off every access is
    # Secure, which the SSRAM MPCs allow from reset.  SysTick: the 20 MHz MAINCLK.
    "cortex-m33": {"flags": ["-mcpu=cortex-m33", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard"],
                   "machine": "mps2-an505", "code": (0x10000000, 4 * MiB),
                   "data": (0x38000000, 4 * MiB), "path": "dsp", "hz": 20_000_000},
    "cortex-m55": {"flags": ["-mcpu=cortex-m55", "-mfloat-abi=hard"], "machine": "mps3-an547",
                   "code": (0x0, 512 * KiB), "data": (0x20000000, 512 * KiB), "path": "mve",
                   "hz": 32_000_000, "bulk": (0x01000000, 2 * MiB)},
}
# weights above this share of the code memory go to the machine's "bulk" memory (the
# AN547's SRAM); the rest of the code memory is for the code (about 100 KiB with CMSIS-NN)
WEIGHTS_SHARE = 0.75
STACK = 16 * KiB


def core(opts) -> dict:
    """The chosen core's entry (toolchain.cpu)."""
    return CPUS[opts["toolchain"]["cpu"]]
