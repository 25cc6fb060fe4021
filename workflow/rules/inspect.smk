rule profile:
    input:
        code=ALL_KERNEL_CODE,
        build=cuda_builds(KERNELS),
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
        # CUDA kernels: the PTX and cubins of build_cuda's resource report, not a second compile
        build=cuda_builds(KERNELS),
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
        code=ALL_KERNEL_CODE,
        build=cuda_builds(NCU_KERNELS),
        # after the measure jobs: Triton kernels run the configs they tuned
        tuned=per_kernel("autotune/{kernel}.csv", NCU_KERNELS),
    output:
        # one session for every family's ladder steps: a session's start-up (Python, CUDA
        # under ncu) cost about 10 s, as much as the profiling of a family
        csv=per_kernel("ncu/{kernel}.csv", NCU_KERNELS),
    log:
        stage("logs/ncu.log"),
    resources:
        gpu=GPU,
        gpu_model=gpu_model,
    params:
        kernels=NCU_KERNELS,
        config=job_config(NCU_KERNELS, ["ncu"]),
        env=job_env,
    script:
        "../scripts/ncu.py"
