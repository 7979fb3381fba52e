"""What the gap9 code reads about the chip it plans for: a Chip (the kind's schema, defaults
and platforms) and its Simulators (the bare-metal GVSoC platforms, baremetal.py).

gap9 and the kinds that reuse its codegen, kernels, tiling and layer-by-layer runner (another
PULP cluster chip) differ only in this data: the planner, the nodes
and the run step ask the chip and the platform's Simulator, never the chip's name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass(frozen=True)
class Simulator:
    """A bare-metal GVSoC platform: the runtime of kernels/gap9/open on a GVSoC model with no
    L3, so a model whose parameters do not fit L2 runs layer by layer, with cycles counted."""
    platform: str                         # its name on the command line (platform=...)
    find: Callable[[], Optional[str]]     # the launcher when installed (platform=auto), else None
    require: Callable[[str], str]         # (target name) -> the launcher, or a UserError saying what to install
    command: Callable[[str, str, str], list]   # (launcher, elf, work dir) -> the run's command line
    cycles_source: str                    # report.json's cycles_source: what the cycle figures are
    defines: tuple = ()                   # C defines the runtime needs for this model (open_fc.c)
    runtime_name: str = ""                # what the runtime calls the chip: "<name> ERROR: ..." lines
    cores: int = 8                        # cluster cores the runtime forks on: auto and the most
    memory: Optional[Callable[[dict], None]] = None    # what the model implies for the memory options


@dataclass(frozen=True)
class Chip:
    """A PULP cluster chip as one target kind plans for it."""
    kind: str                             # the target kind's name (error messages)
    title: str                            # the chip's name in messages ("GAP9")
    defaults: dict                        # the kind's DEFAULTS: the chip's geometry (L1, L2, L3, cores)
    platforms: tuple                      # SCHEMA's run.platform, "auto" included when the kind has it
    simulators: dict = field(default_factory=dict)     # {platform: Simulator}
    cores_note: str = ""                  # why the most cores is what it is (check_limits)

    def simulator(self, platform: str) -> Optional[Simulator]:
        return self.simulators.get(platform)

    def lib_platforms(self) -> tuple:
        """The platforms with an archive of their own (<platform>/lib): all but auto."""
        return tuple(p for p in self.platforms if p != "auto")

    def most_cores(self, platform: str) -> int:
        sim = self.simulator(platform)
        return sim.cores if sim else 8
