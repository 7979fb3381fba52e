"""Running programs: the run step on this machine (host, emulators), a device or simulator
log vetted and decoded, run.log read and checked layer by layer."""
