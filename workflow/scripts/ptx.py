from kernellab.workflow import pipeline

with pipeline.job(
    snakemake.log[0],
    gpu=snakemake.resources.get("gpu", 0),
    bytecode=snakemake.params.bytecode,
    **snakemake.params.env,
):
    pipeline.ptx(snakemake.params.config, snakemake.params.kernels, snakemake.input.build, [snakemake.output.index])
