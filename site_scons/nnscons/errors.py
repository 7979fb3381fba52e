"""User-facing errors.

Anything a user can cause (bad manifest, bad model, bad input) raises UserError.
SConstruct catches it and prints the message without a traceback, exit status 2.
Messages say where (file, line, layer), what was expected, and what to do.
"""


class UserError(Exception):
    """An error caused by user input; printed without a traceback."""


class ManifestError(UserError):
    """An error in targets.yaml (message carries file:line and key path)."""


class ModelError(UserError):
    """An error in a model source (ONNX file, ARES directory, ...)."""
