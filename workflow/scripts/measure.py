from kernellab.workflow import pipeline

with pipeline.job(
    snakemake.log[0],
    gpu=snakemake.resources.get("gpu", 0),
    bytecode=snakemake.params.bytecode,
    **snakemake.params.env,
):
    pipeline.measure(
        snakemake.params.config,
        snakemake.wildcards.kernel,
        snakemake.input.build,
        snakemake.output.check,
        snakemake.output.bench,
        snakemake.output.samples,
        snakemake.output.autotune,
    )
