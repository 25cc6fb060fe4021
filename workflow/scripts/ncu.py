from kernellab.workflow import pipeline

with pipeline.job(
    snakemake.log[0],
    gpu=snakemake.resources.get("gpu", 0),
    bytecode=snakemake.params.bytecode,
    **snakemake.params.env,
):
    pipeline.ncu(snakemake.params.config, snakemake.params.kernels, list(snakemake.input.build), snakemake.output.csv)
