rule profile:
    input:
        code=ALL_KERNEL_CODE,
        build=rules.build_cuda.output.json,
        # after the measure jobs: Triton kernels run the configs they tuned
        tuned=per_kernel("autotune/{kernel}.csv"),
    output:
        csv=[
            report(
                stage(f"profile/{k}.csv"),
                caption="../../report/captions/profile.rst",
                category="Profiles",
                labels={"kernel": k},
            )
            for k in KERNELS
        ],
        traces=[directory(stage(f"profile/{k}")) for k in KERNELS],
    log:
        stage("logs/profile.log"),
    resources:
        gpu=GPU,
        gpu_model=gpu_model,
    params:
        kernels=KERNELS,
        config=job_config(KERNELS),
        env=job_env,
    script:
        "../scripts/profile.py"


rule ptx:
    input:
        code=ALL_KERNEL_CODE,
    output:
        index=per_kernel("ptx/{kernel}/index.json"),
    log:
        stage("logs/ptx.log"),
    params:
        kernels=KERNELS,
        config=job_config(KERNELS, ["ptx"]),
        env=job_env,
    script:
        "../scripts/ptx.py"


rule ncu:
    input:
        code=kernel_code,
        build=rules.build_cuda.output.json,
        tuned=rules.measure.output.autotune,
    output:
        csv=stage("ncu/{kernel}.csv"),
    log:
        stage("logs/ncu/{kernel}.log"),
    resources:
        gpu=GPU,
        gpu_model=gpu_model,
    params:
        config=kernel_job_config("ncu"),
        env=job_env,
    script:
        "../scripts/ncu.py"
