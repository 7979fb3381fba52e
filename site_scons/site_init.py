# Read by SCons before the SConstruct. Nothing outside build/ is written: no bytecode caches.
import sys

sys.dont_write_bytecode = True
