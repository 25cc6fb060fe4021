from kernellab.workflow import assemble, pipeline

with pipeline.logged(snakemake.log[0], snakemake.params.bytecode):
    assemble.report(
        stage_set_dir=snakemake.input.summary.rsplit("/", 1)[0],
        others=snakemake.params.compared["others"],
        references=snakemake.params.compared["references"],
    )
