"""The workflow's Python side: what each Snakemake rule runs, the config, GPU slots,
aggregation, set comparison and the run's terminal."""
