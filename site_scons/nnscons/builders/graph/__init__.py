"""The SCons node graph of a build: session state, actions, node declarations, the core Tool,
the build folder and its cache, the standalone export, the console."""
