"""nnscons: declarative, incremental model-to-firmware builds on SCons."""
