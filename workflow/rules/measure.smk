rule measure:
    input:
        build=family_build,
        survey=rules.survey.output.json,
    output:
        check=report(
            stage("check/{kernel}.csv"),
            caption="../../report/captions/correctness.rst",
            category="Correctness",
            labels={"kernel": "{kernel}"},
        ),
        bench=stage("bench/{kernel}.csv"),
        samples=stage("bench/{kernel}.samples.json.gz"),
        autotune=report(
            stage("autotune/{kernel}.csv"),
            caption="../../report/captions/autotune.rst",
            category="Autotuning",
            labels={"kernel": "{kernel}"},
        ),
        # torch.profiler at the profile shape, in the same job after the benchmark: Triton kernels
        # run the configs they tuned, and the job's start-up is paid once, not once more per family
        profile=report(
            stage("profile/{kernel}.csv"),
            caption="../../report/captions/profile.rst",
            category="Profiles",
            labels={"kernel": "{kernel}"},
        ),
        traces=directory(stage("profile/{kernel}")),
    log:
        stage("logs/measure/{kernel}.log"),
    resources:
        gpu=GPU,
        gpu_model=gpu_model,
    params:
        bytecode=bytecode_cache,
        code=kernel_code("measure"),
        config=kernel_job_config("compile_ahead"),
        env=job_env,
    script:
        "../scripts/measure.py"
