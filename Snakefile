# The kernel lab: correctness, benchmarks, profiles, PTX/SASS and autotuning of GPU kernels,
# aggregated into results/<hardware>/ (summary.csv, report.html, report.md, KERNEL_LOG.md).
# Run:  snakemake --cores 1            (see README.md)


from snakemake.utils import min_version

min_version("9.0")


# the default config, unless the command line names config files: those replace it (merged in
# their order), in this process and in each cluster job alike (a cluster job is not told
# --replace-workflow-config, so a merge with the default would give it other kernels). The
# settings a file leaves out are the schema's defaults, which are the default config's: a file
# naming only your family is measured as the default config is, in a set of its own
# (kernellab.workflow.config.narrow)
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


# the profile's quiet is for a real run's terminal: a dry run and the log file keep the detail
from kernellab.engine.progress import keep_snakemake_detail

keep_snakemake_detail(logger, workflow.output_settings)


container: RUN_CONFIG["container"]


report: "report/workflow.rst"


include: "workflow/rules/build.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/inspect.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        expand(rules.publish.output, set=SETS),


onstart:
    take_run_lock()  # first: one run at a time in a staging folder (common.smk)
    from kernellab.workflow import interrupt

    # Ctrl-C or kill -INT: the jobs stop now, one line on the terminal
    interrupt.install(logger)
    run_command_for_cluster_jobs()  # the command line, for a job on a cluster node (common.smk)
    # the families loaded, the config checked against them
    REGISTRY = check_families()
    from kernellab.workflow.pipeline import write_run_plan

    # each family's work, for the measure jobs' estimate of the run's time left
    write_run_plan(RUN_CONFIG, REGISTRY, RUN_CONFIG["staging"], SETS)


onerror:
    from kernellab.workflow import interrupt
    from kernellab.workflow.run_summary import stopped_message

    print(stopped_message(log, interrupt.interrupted()), file=sys.stderr)
    if interrupt.interrupted():
        # and no "At least one job did not complete successfully" after it
        sys.exit(130)


onsuccess:
    from kernellab.workflow.run_summary import finish

    # after publishing: a case that failed or raised, or a family skipped at load (each set's
    # environment.json lists those), ends the run with exit status 1 (Snakemake's CLI lets
    # SystemExit through, its locks released)
    status = finish(RUN_CONFIG["results"], SETS)
    if status:
        sys.exit(status)
