"""Kernel families, one module each. Every module registers its family on import."""
