from kernellab.workflow import assemble, pipeline

with pipeline.logged(snakemake.log[0], snakemake.params.bytecode):
    assemble.publish(snakemake.params.stage, snakemake.params.results)
