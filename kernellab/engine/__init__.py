"""The engine: loading families, checking, timing, tuning, profiling and building kernels."""
