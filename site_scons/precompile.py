"""The set-up's bytecode: `python site_scons/precompile.py [PROJECT]` compiles the project's own
modules (site_scons, the zoo's models) into `<venv>/nnscons-pycache`, as pip compiles the
packages it installs. `./nnscons`'s bootstrap runs it once per venv; builds read it while it
matches the source and never write there (site_scons/site_init.py)."""
import compileall
import os
import sys

PREFIX = os.path.join(sys.prefix, "nnscons-pycache")


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                           else os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.pycache_prefix = PREFIX     # set after the imports: the stdlib keeps its own caches
    for folder in ("site_scons", "models"):
        compileall.compile_dir(os.path.join(root, folder), quiet=1)


if __name__ == "__main__":
    main()
