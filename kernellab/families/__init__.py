"""The kernel families, one package per folder of the configured kernel directories.

``kernellab.engine.registry.load`` imports each folder as ``kernellab.families.<name>`` (its
own search location, given when it is imported), so ``kernels/softmax/`` is
``kernellab.families.softmax`` and a user's ``../my-kernels/swiglu/`` is
``kernellab.families.swiglu``; a family folder may import its own modules relatively
(``from .rows import ...``).
"""
