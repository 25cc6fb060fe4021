"""Exceptions the harness turns into statuses."""


class Unavailable(Exception):
    """The implementation cannot run here (no GPU, extension not built...): status ``unavailable``."""


class ConfigError(ValueError):
    """A configuration problem, reported before any GPU work with the key and value at fault."""


class FamilyError(Exception):
    """A family folder that cannot be loaded; the message names the file and the reason."""


class BuildError(Exception):
    """CUDA sources that did not compile: the message names the file, line and nvcc's error, so the
    status is ``error`` with no location of ours beside it."""
