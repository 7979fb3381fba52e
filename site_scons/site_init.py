# Read by SCons before the SConstruct. Nothing outside build/ is written: Python's bytecode
# cache of nnscons's own modules goes to build/.pycache (compiling them on every call would
# cost a no-op build about 0.1 s).
import os
import sys

sys.dont_write_bytecode = False
sys.pycache_prefix = os.path.abspath(os.path.join("build", ".pycache"))
