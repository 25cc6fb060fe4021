# The kernel lab's GPU environment: PyTorch 2.11 (CUDA 13.0 build), Triton 3.6, nvcc and cuobjdump
# (CUDA 13.0 toolkit), Nsight Compute (ncu) and the Python pins of envs/requirements.txt.
# It holds no project code: Snakemake runs the jobs of a checkout in it (README, "Running in the container").
#
#   docker build -t ghcr.io/kernel-lab/kernel-lab:0.1.0 .
#
# Base image: the official PyTorch image, CUDA *devel* flavour (nvcc, cuobjdump, CUDA headers for the
# extension), pinned by its full tag. pytorch/pytorch tags read <torch>-cuda<major.minor>-cudnn<N>-<flavour>
# (pytorch's docker.Makefile / docker-release workflow), e.g. 2.11.0-cuda13.0-cudnn9-devel; never `latest`.
# Its torch is the CUDA 13.0 build that the H200 runs; torch 2.11.0 requires triton==3.6.0, the Triton pin
# of envs/requirements.txt. For a bit-for-bit rebuild add the digest you pulled: FROM <image>:<tag>@sha256:...
# tests/test_pins.py checks the tag against TORCH_VERSION/CUDA_VERSION below and the labels against the pins.
FROM pytorch/pytorch:2.11.0-cuda13.0-cudnn9-devel

# Versions of what the base image brings (checked below, at build time) and of the Triton pin.
ARG TORCH_VERSION=2.11.0
ARG CUDA_VERSION=13.0
ARG TRITON_VERSION=3.6.0
ARG KERNELLAB_VERSION=0.1.0

LABEL org.opencontainers.image.title="kernel-lab" \
      org.opencontainers.image.description="Kernel lab: benchmark, check, profile and report GPU kernels (Snakemake + PyTorch + Triton + CUDA)" \
      org.opencontainers.image.version="${KERNELLAB_VERSION}" \
      org.opencontainers.image.source="https://github.com/kernel-lab/kernel-lab" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.base.name="docker.io/pytorch/pytorch:2.11.0-cuda13.0-cudnn9-devel" \
      io.kernellab.torch.version="${TORCH_VERSION}" \
      io.kernellab.cuda.version="${CUDA_VERSION}" \
      io.kernellab.triton.version="${TRITON_VERSION}" \
      io.kernellab.nsight-compute.package="cuda-nsight-compute-13-0"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Nsight Compute for the ncu rule, from NVIDIA's CUDA apt repository (configured in the CUDA base image
# under pytorch's devel image): the package of this CUDA minor version, any 13.0.x patch release; and
# cuobjdump for the SASS dumps (a no-op where the devel image has it already).
# build-essential: the C++ compiler and c++filt for the CUDA extension, and the C compiler Triton uses
# for its launcher stubs; ninja-build: torch's extension builder. Versions pinned to their series, which
# hold on Ubuntu 22.04 and 24.04 alike.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "cuda-nsight-compute-13-0=13.0.*" \
        "cuda-cuobjdump-13-0=13.0.*" \
        "build-essential=12.*" \
        "ninja-build=1.*" \
    && rm -rf /var/lib/apt/lists/*

# ncu on PATH (the package puts it under /usr/local/cuda-13.0 or /opt/nvidia/nsight-compute/<version>),
# and the CUDA tools the pipeline calls must answer.
RUN ncu_bin="$(command -v ncu || find /usr/local/cuda-13.0 /usr/local/cuda /opt/nvidia -name ncu -type f -perm -u+x 2>/dev/null | sort -V | tail -n 1)" \
    && test -n "${ncu_bin}" \
    && { [ "${ncu_bin}" = /usr/local/bin/ncu ] || ln -sf "${ncu_bin}" /usr/local/bin/ncu; } \
    && ncu --version \
    && nvcc --version \
    && cuobjdump --version

# The Python pins. torch is left out of envs/requirements.txt here: its torch line is the CPU/CI pin, and
# the base image's CUDA build must stay (a constraint on the installed version makes sure pip keeps it).
COPY envs/requirements.txt /tmp/kernellab/requirements.txt
RUN grep -v -E '^[[:space:]]*torch[[:space:]]*==' /tmp/kernellab/requirements.txt > /tmp/kernellab/requirements-image.txt \
    && python -c "import torch; print('torch==' + torch.__version__)" > /tmp/kernellab/constraints.txt \
    && python -m pip install --no-cache-dir -r /tmp/kernellab/requirements-image.txt -c /tmp/kernellab/constraints.txt \
    && python -m pip check \
    && python -c "import torch, triton; \
v = torch.__version__.split('+')[0]; assert v == '${TORCH_VERSION}', f'base image torch {v} != ${TORCH_VERSION}'; \
c = torch.version.cuda or ''; assert c.startswith('${CUDA_VERSION}'), f'torch built for CUDA {c!r}, not ${CUDA_VERSION}'; \
assert triton.__version__ == '${TRITON_VERSION}', f'triton {triton.__version__} != ${TRITON_VERSION}'; \
print('torch', torch.__version__, 'cuda', c, 'triton', triton.__version__)" \
    && rm -rf /tmp/kernellab

# A non-root user (a fixed uid clear of the base image's users); the checkout is mounted at /workspace.
# With Apptainer the jobs run as the host user; with `docker run` pass --user "$(id -u):$(id -g)".
RUN useradd --create-home --shell /bin/bash --uid 10001 --user-group kernellab \
    && mkdir -p /workspace \
    && chown 10001:10001 /workspace
USER 10001:10001
WORKDIR /workspace

CMD ["bash"]
