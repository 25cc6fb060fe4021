"""The kernel families, one package per folder of the configured kernel directories.

``kernellab.engine.registry.load`` sets this package's ``__path__`` to those directories, so
``kernels/softmax/`` imports as ``kernellab.families.softmax`` and a user's
``../my-kernels/swiglu/`` as ``kernellab.families.swiglu``; a family folder may import its
own modules relatively (``from .kernels import ...``).
"""

__path__: list[str] = []
