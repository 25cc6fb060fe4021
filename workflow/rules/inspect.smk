# profile and ptx are jobs of one family each: adding a family or changing one profiles and
# compiles only it (a process's start-up, CUPTI's on a GPU, is paid once per family)
rule profile:
    input:
        build=family_build,
        # after the measure job: Triton kernels run the configs they tuned
        tuned=stage("autotune/{kernel}.csv"),
    output:
        csv=report(
            stage("profile/{kernel}.csv"),
            caption="../../report/captions/profile.rst",
            category="Profiles",
            labels={"kernel": "{kernel}"},
        ),
        traces=directory(stage("profile/{kernel}")),
    log:
        stage("logs/profile/{kernel}.log"),
    resources:
        gpu=GPU,
        gpu_model=gpu_model,
    params:
        bytecode=bytecode_cache,
        code=kernel_code("profile"),
        kernels=lambda wildcards: [wildcards.kernel],
        config=kernel_job_config(),
        env=job_env,
    script:
        "../scripts/profile.py"


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
