rule survey:
    output:
        json=stage("survey.json"),
    log:
        stage("logs/survey.log"),
    resources:
        gpu=GPU,
        gpu_model=gpu_model,
    params:
        bytecode=bytecode_cache,
        env=job_env,
    script:
        "../scripts/survey.py"


# each family's CUDA is a library of its own: a change to one family's sources rebuilds it and
# reruns its jobs, and adding a family builds only it
rule build_cuda:
    output:
        json=stage("build/{kernel}/build.json"),
        resources=stage("build/{kernel}/resources.csv"),
    log:
        stage("logs/build_cuda/{kernel}.log"),
    params:
        bytecode=bytecode_cache,
        sources=cuda_sources,
        folder=lambda wildcards: str(FAMILY_DIRS[wildcards.kernel]),
    script:
        "../scripts/build_cuda.py"


rule cuda_resources:
    input:
        per_kernel("build/{kernel}/resources.csv", CUDA_KERNELS),
    output:
        report(
            stage("build/resources.csv"),
            caption="../../report/captions/resources.rst",
            category="CUDA build",
        ),
    log:
        stage("logs/cuda_resources.log"),
    params:
        bytecode=bytecode_cache,
    script:
        "../scripts/cuda_resources.py"
