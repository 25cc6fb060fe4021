# ptx is a job of one family each: adding a family or changing one compiles only it
rule ptx:
    input:
        # CUDA kernels: the PTX and cubins of build_cuda's resource report, not a second compile
        build=family_build,
    output:
        index=stage("ptx/{kernel}/index.json"),
    log:
        stage("logs/ptx/{kernel}.log"),
    params:
        bytecode=bytecode_cache,
        code=kernel_code("ptx"),
        kernels=lambda wildcards: [wildcards.kernel],
        config=kernel_job_config("ptx"),
        env=job_env,
    script:
        "../scripts/ptx.py"


rule ncu:
    input:
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
        bytecode=bytecode_cache,
        family_keys=NCU_KEYS,
        kept=ncu_kept,
        kernels=NCU_KERNELS,
        config=job_config(NCU_KERNELS, ["ncu"]),
        env=job_env,
    script:
        "../scripts/ncu.py"
