# The kernel lab's environment, in two flavours (build argument FLAVOUR):
#   gpu (the default): PyTorch 2.11 (CUDA 13.0 build), Triton 3.6, nvcc and cuobjdump (CUDA 13.0 toolkit),
#       Nsight Compute (ncu) and the Python pins of envs/requirements.txt;
#   cpu: Debian bookworm's Python 3.11, PyTorch's CPU build of the torch pin of envs/requirements.txt,
#       Triton 3.6 and the same pins: what CI builds and runs the test config in (.ci/container,
#       tests/test_container.py). No GPU, no CUDA toolkit: the CUDA steps are "unavailable" in it.
# Either holds no project code: Snakemake runs the jobs of a checkout in it (README, "In the container").
#
#   docker build -t kernel-lab:0.1.0 .
#   docker build --build-arg FLAVOUR=cpu -t kernel-lab:0.1.0-cpu .
#
# Only the stages of the chosen flavour are built (the cpu build never pulls the PyTorch image).
# Pip settings for a machine with a local wheel folder or an intercepting proxy (PIP_CERT, PIP_FIND_LINKS,
# PIP_INDEX_URL, PIP_EXTRA_INDEX_URL) come as the build secret pip.env, lines NAME='value' that the pip steps
# read: a secret stays out of the image and its history (build arguments would show in `podman history`).
#   docker build --secret id=pip.env,src=pip.env --build-arg FLAVOUR=cpu -t kernel-lab:0.1.0-cpu .
# tests/test_pins.py checks the base tag against the gpu stage's TORCH_VERSION/CUDA_VERSION, the labels against
# the pins, and the cpu stage's torch against envs/requirements.txt.
ARG FLAVOUR=gpu
ARG TRITON_VERSION=3.6.0

# ---------------------------------------------------------------------------------------------- gpu
# Base image: the official PyTorch image, CUDA *devel* flavour (nvcc, cuobjdump, CUDA headers for the
# extension), pinned by its full tag. pytorch/pytorch tags read <torch>-cuda<major.minor>-cudnn<N>-<flavour>
# (pytorch's docker.Makefile / docker-release workflow), e.g. 2.11.0-cuda13.0-cudnn9-devel; never `latest`.
# Its torch is the CUDA 13.0 build that the H200 runs; torch 2.11.0 requires triton==3.6.0, the Triton pin
# of envs/requirements.txt. For a bit-for-bit rebuild add the digest you pulled: FROM <image>:<tag>@sha256:...
FROM pytorch/pytorch:2.11.0-cuda13.0-cudnn9-devel AS base-gpu

# Versions of what the base image brings (checked at build time, in the shared stage below).
ARG TORCH_VERSION=2.11.0
ARG CUDA_VERSION=13.0

LABEL org.opencontainers.image.base.name="docker.io/pytorch/pytorch:2.11.0-cuda13.0-cudnn9-devel" \
      io.kernellab.flavour="gpu" \
      io.kernellab.torch.version="${TORCH_VERSION}" \
      io.kernellab.cuda.version="${CUDA_VERSION}" \
      io.kernellab.nsight-compute.package="cuda-nsight-compute-13-0"
# KERNELLAB_FLAVOUR: environment.json names the image kernel-lab:<version>[-cpu], the name the build
# command above gives it; <version> is the project's (pyproject.toml), which no line here repeats.
ENV KERNELLAB_FLAVOUR="gpu" \
    KERNELLAB_TORCH_VERSION="${TORCH_VERSION}" \
    KERNELLAB_CUDA_VERSION="${CUDA_VERSION}"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Nsight Compute for the ncu rule, from NVIDIA's CUDA apt repository (configured in the CUDA base image
# under pytorch's devel image): the package of this CUDA minor version, any 13.0.x patch release; and
# cuobjdump for the SASS dumps (a no-op where the devel image has it already).
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "cuda-nsight-compute-13-0=13.0.*" \
        "cuda-cuobjdump-13-0=13.0.*" \
    && rm -rf /var/lib/apt/lists/*

# ncu on PATH (the package puts it under /usr/local/cuda-13.0 or /opt/nvidia/nsight-compute/<version>),
# and the CUDA tools the pipeline calls must answer.
RUN ncu_bin="$(command -v ncu || find /usr/local/cuda-13.0 /usr/local/cuda /opt/nvidia -name ncu -type f -perm -u+x 2>/dev/null | sort -V | tail -n 1)" \
    && test -n "${ncu_bin}" \
    && { [ "${ncu_bin}" = /usr/local/bin/ncu ] || ln -sf "${ncu_bin}" /usr/local/bin/ncu; } \
    && ncu --version \
    && nvcc --version \
    && cuobjdump --version

# ---------------------------------------------------------------------------------------------- cpu
# Debian's Python 3.11 in a virtual environment (PEP 668: Debian's own Python takes no pip installs),
# and PyTorch's CPU build of the torch pin of envs/requirements.txt ("+cpu": no CUDA libraries), from
# PyTorch's CPU wheel index.
FROM debian:bookworm AS base-cpu

ARG TORCH_VERSION=2.13.0
# PyTorch's CPU wheel index, unless the build's pip settings name an extra index of their own
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

LABEL org.opencontainers.image.base.name="docker.io/library/debian:bookworm" \
      io.kernellab.flavour="cpu" \
      io.kernellab.torch.version="${TORCH_VERSION}"
ENV KERNELLAB_FLAVOUR="cpu" \
    KERNELLAB_TORCH_VERSION="${TORCH_VERSION}" \
    KERNELLAB_CUDA_VERSION="" \
    PATH="/opt/venv/bin:${PATH}"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# python3-dev: the headers torch.compile's C++ kernels (and Triton's launcher stubs) compile against.
# hadolint ignore=SC1091
RUN --mount=type=secret,id=pip.env \
    apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "python3=3.11.*" \
        "python3-venv=3.11.*" \
        "python3-dev=3.11.*" \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv \
    && if [ -s /run/secrets/pip.env ]; then set -a && . /run/secrets/pip.env && set +a; fi \
    && PIP_EXTRA_INDEX_URL="${PIP_EXTRA_INDEX_URL:-${TORCH_INDEX_URL}}" \
        python -m pip install --no-cache-dir "torch==${TORCH_VERSION}+cpu"

# ------------------------------------------------------------------------------ shared by both flavours
# hadolint ignore=DL3006
FROM base-${FLAVOUR}

ARG FLAVOUR
ARG TRITON_VERSION

LABEL org.opencontainers.image.title="kernel-lab" \
      org.opencontainers.image.description="Kernel lab: benchmark, check, profile and report GPU kernels (Snakemake + PyTorch + Triton + CUDA)" \
      org.opencontainers.image.source="https://github.com/kernel-lab/kernel-lab" \
      org.opencontainers.image.licenses="MIT" \
      io.kernellab.triton.version="${TRITON_VERSION}"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# build-essential: the C++ compiler and c++filt for the CUDA extension and torch.compile, and the C
# compiler Triton uses for its launcher stubs; ninja-build: torch's extension builder. Versions pinned
# to their series, which hold on Ubuntu 22.04, 24.04 and Debian 12 alike.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "build-essential=12.*" \
        "ninja-build=1.*" \
    && rm -rf /var/lib/apt/lists/*

# The Python pins. torch is left out of envs/requirements.txt here: the base stage brought it (the CUDA
# build of the PyTorch image, or the CPU build above), and a constraint on the installed version makes
# sure pip keeps it. Then the versions are checked: torch and CUDA (none for cpu) as the base stage
# declares them, Triton as pinned.
COPY envs/requirements.txt /tmp/kernellab/requirements.txt
# hadolint ignore=SC1091
RUN --mount=type=secret,id=pip.env \
    if [ -s /run/secrets/pip.env ]; then set -a && . /run/secrets/pip.env && set +a; fi \
    && grep -v -E '^[[:space:]]*torch[[:space:]]*==' /tmp/kernellab/requirements.txt > /tmp/kernellab/requirements-image.txt \
    && python -c "import torch; print('torch==' + torch.__version__)" > /tmp/kernellab/constraints.txt \
    && python -m pip install --no-cache-dir -r /tmp/kernellab/requirements-image.txt -c /tmp/kernellab/constraints.txt \
    && python -m pip check \
    && python -c "import os, torch, triton; \
want, want_cuda = os.environ['KERNELLAB_TORCH_VERSION'], os.environ['KERNELLAB_CUDA_VERSION']; \
v = torch.__version__.split('+')[0]; assert v == want, f'torch {v} != {want}'; \
c = torch.version.cuda or ''; assert c.startswith(want_cuda) and bool(c) == bool(want_cuda), f'torch built for CUDA {c!r}, not {want_cuda!r}'; \
assert triton.__version__ == '${TRITON_VERSION}', f'triton {triton.__version__} != ${TRITON_VERSION}'; \
print('${FLAVOUR}: torch', torch.__version__, 'cuda', c or None, 'triton', triton.__version__)" \
    && rm -rf /tmp/kernellab

# A non-root user (a fixed uid clear of the base image's users); the checkout is mounted at /workspace.
# With Apptainer the jobs run as the host user; with `docker run` pass --user "$(id -u):$(id -g)".
RUN useradd --create-home --shell /bin/bash --uid 10001 --user-group kernellab \
    && mkdir -p /workspace \
    && chown 10001:10001 /workspace
USER 10001:10001
WORKDIR /workspace

CMD ["bash"]
