"""Liger-Kernel and QuACK as implementations (kernellab.kit.peers): registered beside ours, unavailable
with the reason where they cannot run, and their adapters' arguments, checked without a GPU and
without the packages (fake modules stand in for them)."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from kernellab.engine import registry, runtime
from kernellab.engine.cases import Case
from kernellab.engine.harness import bench_impl, check_impl, run_case_check
from kernellab.engine.timing import TimingConfig
from kernellab.errors import Unavailable
from kernellab.kit import peers

REGISTRY = registry.load()  # the families of the default kernel folders

FAMILIES = ("softmax", "layer_norm", "rms_norm")
PEER_IMPLS = [(f, k) for f in FAMILIES for k in ("liger", "quack")]


def test_registry_holds_the_peers_in_the_row_families_only():
    fams = REGISTRY.families
    for name in FAMILIES:
        for kind in ("liger", "quack"):
            impl = fams[name].impls[kind]
            assert (impl.impl, impl.backend, impl.step) == (kind, kind, "")
    # QuACK's GEMM takes neither fp32 nor tf32, nor rows that are not 16-byte multiples (our check shape)
    assert not {"liger", "quack"} & set(fams["matmul"].impls)
    # importing the families imported neither library
    assert not [m for m in sys.modules if m.split(".")[0] in ("liger_kernel", "quack")]


@pytest.mark.skipif(runtime.has_gpu(), reason="checks the rows of a machine without a GPU")
@pytest.mark.parametrize("name,key", PEER_IMPLS, ids=[f"{n}-{k}" for n, k in PEER_IMPLS])
def test_without_a_gpu_their_rows_are_unavailable_with_the_reason(name, key):
    fam = REGISTRY.family(name)
    impl = fam.impls[key]
    cases = [Case(name, key, shape, dtype, ()) for dtype in ("fp32", "bf16") for shape in ((3, 33), (8, 64))]
    checks = list(check_impl(fam, impl, cases, [0, 1], "cpu"))
    want = {"liger": "Liger-Kernel needs a CUDA GPU", "quack": "QuACK needs a CUDA GPU (sm_90+)"}[key]
    assert [(r["shape"], r["dtype"]) for r in checks] == [(c.labels()["shape"], c.dtype) for c in cases]
    assert {(r["status"], r["reason"]) for r in checks} == {("unavailable", want)}
    cfg = TimingConfig(min_samples=2, max_samples=3, budget_s=0.01, warmup_s=0.0)
    benches = list(bench_impl(fam, impl, cases, cfg, "cpu"))
    assert len(benches) == len(cases) and {(r["status"], r["reason"]) for r in benches} == {("unavailable", want)}


@pytest.fixture()
def on_gpu(monkeypatch):
    """As if the inputs were on a GPU the library runs on."""
    monkeypatch.setattr(peers, "gpu_reason", lambda peer, tensor: "")


def _fresh(monkeypatch, name: str, attr: str):
    """A fresh copy of a family's entry (it keeps what its first call found), restored afterwards."""
    mod = REGISTRY.module(name)
    old = getattr(mod, attr)
    monkeypatch.setattr(mod, attr, peers.entry(old.peer, *old.where))
    return mod


class _Imports:
    """A finder for one module whose code imports another."""

    def __init__(self, name: str, imports: str):
        self.name, self.imports = name, imports

    def find_spec(self, name, path=None, target=None):
        import importlib.util

        if name != self.name:
            return None
        loader = types.SimpleNamespace(create_module=lambda spec: None,
                                       exec_module=lambda module: __import__(self.imports))
        return importlib.util.spec_from_loader(name, loader)


def _fake(monkeypatch, module: str, **functions):
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        monkeypatch.setitem(sys.modules, ".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    for fname, fn in functions.items():
        setattr(sys.modules[module], fname, fn)


class _Absent:
    """A finder that finds no module of one package, first on sys.meta_path: as if not installed."""

    def __init__(self, root: str):
        self.root = root

    def find_spec(self, name, path=None, target=None):
        if name == self.root or name.startswith(f"{self.root}."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _absent(monkeypatch, root: str) -> None:
    for m in [m for m in sys.modules if m == root or m.startswith(f"{root}.")]:
        monkeypatch.delitem(sys.modules, m)
    monkeypatch.setattr(sys, "meta_path", [_Absent(root), *sys.meta_path])


@pytest.mark.parametrize("package,root,name,attr", [("liger-kernel", "liger_kernel", "softmax", "_liger_softmax"),
                                                    ("quack-kernels", "quack", "rms_norm", "_quack_rms_norm")])
def test_a_package_not_installed_is_unavailable_with_the_install_command(monkeypatch, on_gpu, package, root, name,
                                                                          attr):
    _absent(monkeypatch, root)
    mod = _fresh(monkeypatch, name, attr)
    x = torch.ones(2, 8)
    with pytest.raises(Unavailable, match=rf"^{package} is not installed \(pip install -e \.\[peers\]\)$"):
        getattr(mod, attr)(x)


def test_a_missing_dependency_is_unavailable_naming_it(monkeypatch, on_gpu):
    """QuACK installed without the CUTLASS DSL: its import stops at ``import cutlass``."""
    _absent(monkeypatch, "cutlass")
    _fake(monkeypatch, "quack")
    sys.modules["quack"].__path__ = []
    monkeypatch.delitem(sys.modules, "quack.softmax", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_Imports("quack.softmax", "cutlass"), *sys.meta_path])
    with pytest.raises(Unavailable, match=r"quack-kernels does not import: No module named 'cutlass'"):
        peers.load(peers.QUACK, "quack.softmax")


def test_quack_layer_norm_gets_float32_weight_and_bias_cast_once_and_the_familys_eps(monkeypatch, on_gpu):
    """The bf16 weight and bias reach QuACK as float32 copies, made on the first call and reused while
    the weight is unchanged; eps is the family's; the result is QuACK's output, and it passes the
    float64 check through the harness (the fake computes what QuACK does)."""
    seen = []

    def layernorm_fwd(x, w, b=None, eps=1e-6):
        seen.append((w, b, eps))
        y = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w, b, eps)
        return y.to(x.dtype)

    _fake(monkeypatch, "quack.rmsnorm", layernorm_fwd=layernorm_fwd)
    fam = REGISTRY.family("layer_norm")
    mod = _fresh(monkeypatch, "layer_norm", "_quack_layer_norm")
    x, w, b = fam.make_inputs((4, 40), "bf16", "cpu", 0)
    out = fam.out_like(x, w, b)
    y1 = fam.impls["quack"].fn(out, x, w, b)
    y2 = fam.impls["quack"].fn(out, x, w, b)
    (w1, b1, eps1), (w2, b2, _eps2) = seen
    assert (w1.dtype, b1.dtype, eps1) == (torch.float32, torch.float32, mod.EPS)
    assert torch.equal(w1, w.float()) and torch.equal(b1, b.float())
    assert w2 is w1 and b2 is b1  # not cast again in the next (timed) call
    assert y1.dtype == torch.bfloat16 and torch.equal(y1, y2)
    w.mul_(2)  # a weight written in place is cast again
    fam.impls["quack"].fn(out, x, w, b)
    assert seen[-1][0] is not w1 and torch.equal(seen[-1][0], w.float())
    row = run_case_check(fam, fam.impls["quack"], Case("layer_norm", "quack", (5, 48), "bf16", ()), 1, "cpu")
    assert row["status"] == "ok", row


def test_liger_adapters_pass_the_familys_eps_and_mode_and_return_the_output(monkeypatch, on_gpu):
    calls = {"ln": []}

    def rms_norm_forward(x, w, eps, offset, casting_mode, row_mode):
        calls["rms"] = (eps, offset, casting_mode, row_mode)
        y = x.float() * torch.rsqrt((x.float() ** 2).mean(-1, keepdim=True) + eps) * w.float()
        return y.to(x.dtype), x, None, 1024, 4, 0

    def layer_norm_forward(x, w, b, eps):
        calls["ln"].append((x.dtype, w.dtype, b.dtype, eps))
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps), x, None, None, 1024, 4

    def _softmax_forward(x):
        return torch.softmax(x, -1), 1024, 4, False

    _fake(monkeypatch, "liger_kernel.ops.rms_norm", rms_norm_forward=rms_norm_forward)
    _fake(monkeypatch, "liger_kernel.ops.layer_norm", layer_norm_forward=layer_norm_forward)
    monkeypatch.setitem(sys.modules, "liger_kernel.ops.softmax", types.ModuleType("liger_kernel.ops.softmax"))
    sys.modules["liger_kernel.ops.softmax"]._softmax_forward = _softmax_forward
    for name, attr in (("rms_norm", "_liger_rms_norm"), ("layer_norm", "_liger_layer_norm"),
                       ("softmax", "_liger_softmax")):
        mod = _fresh(monkeypatch, name, attr)
        fam = REGISTRY.family(name)
        for dtype in ("fp32", "bf16"):
            row = run_case_check(fam, fam.impls["liger"], Case(name, "liger", (6, 50), dtype, ()), 0, "cpu")
            assert row["status"] == "ok", (name, dtype, row)
        if name == "rms_norm":
            assert calls["rms"] == (mod.EPS, 0.0, "llama", None)
        if name == "layer_norm":
            assert calls["ln"] == [(d, d, d, mod.EPS) for d in (torch.float32, torch.bfloat16)]  # as given
    # rows longer than Liger's one block are unavailable, not an error
    fam = REGISTRY.family("softmax")
    x = torch.zeros(1, 65537)
    with pytest.raises(Unavailable, match="Liger-Kernel takes rows of at most 65536 columns, not 65537"):
        fam.impls["liger"].fn(torch.empty_like(x), x)


def test_gpu_reason_on_a_cpu_tensor():
    x = torch.zeros(2, 2)
    assert peers.gpu_reason(peers.QUACK, x) == "QuACK needs a CUDA GPU (sm_90+)"
    assert peers.gpu_reason(peers.LIGER, x) == "Liger-Kernel needs a CUDA GPU"


def test_quack_rows_that_are_no_multiple_of_16_bytes_are_unavailable(monkeypatch, on_gpu):
    """QuACK loads rows in 16-byte vectors (on an H200 a 1001-column row failed its assertion or its
    compile): such a row is an absence with the reason, not an error; an aligned row is called."""
    seen = []
    _fake(monkeypatch, "quack.softmax", softmax_fwd=lambda x: seen.append(x.shape) or torch.softmax(x, -1))
    mod = _fresh(monkeypatch, "softmax", "_quack_softmax")
    fam = REGISTRY.family("softmax")
    for dtype, cols in (("bf16", 1001), ("fp32", 1001), ("bf16", 4)):
        size = 2 if dtype == "bf16" else 4
        with pytest.raises(Unavailable, match=f"^QuACK takes rows of a multiple of 16 bytes, not {cols} × {size} B$"):
            run_case_check(fam, fam.impls["quack"], Case("softmax", "quack", (3, cols), dtype, ()), 0, "cpu")
    assert seen == [] and mod is REGISTRY.module("softmax")
    for dtype, cols in (("bf16", 1000), ("fp32", 1000)):
        row = run_case_check(fam, fam.impls["quack"], Case("softmax", "quack", (3, cols), dtype, ()), 0, "cpu")
        assert row["status"] == "ok", row
    assert seen == [(3, 1000), (3, 1000)]


def test_flashattention4_runs_in_its_layout_forward_and_backward(monkeypatch, on_gpu):
    """FlashAttention-4 (flash_attn.cute.flash_attn_func) takes (batch, seq, heads, head_dim) and
    returns (o, lse): the attention family hands it transposed views with the family's scale and
    causal flag, and its forward and autograd backward check against the float64 reference (a fake
    library, SDPA in FA4's layout, stands in for it)."""
    seen = []

    def flash_attn_func(q, k, v, softmax_scale=None, causal=False):
        seen.append((tuple(q.shape), softmax_scale, causal))
        o = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                             is_causal=causal, scale=softmax_scale)
        return o.transpose(1, 2), None

    _fake(monkeypatch, "flash_attn.cute", flash_attn_func=flash_attn_func)
    _fresh(monkeypatch, "attention", "_fa4")
    fam = REGISTRY.family("attention")
    for key, causal in (("fa4", True), ("fa4.bwd", False)):
        case = Case("attention", key, (1, 2, 40, 16), "bf16", (("causal", causal),))
        row = run_case_check(fam, fam.impls[key], case, 0, "cpu")
        assert row["status"] == "ok", (key, row["reason"])
    assert seen[0] == ((1, 40, 2, 16), 0.25, True) and seen[-1][2] is False


@pytest.mark.skipif(runtime.has_gpu(), reason="checks the rows of a machine without a GPU")
def test_flashattention4_without_a_gpu_is_unavailable_with_the_reason():
    fam = REGISTRY.family("attention")
    case = Case("attention", "fa4", (1, 2, 40, 16), "bf16", (("causal", False),))
    rows = list(check_impl(fam, fam.impls["fa4"], [case], [0], "cpu"))
    assert [(r["status"], r["reason"]) for r in rows] == [("unavailable", "FlashAttention-4 needs a CUDA GPU (sm_90+)")]


def test_a_jobs_run_cache_holds_the_peers_compiled_kernels_and_what_the_user_set_wins(tmp_path, monkeypatch):
    """QuACK's and FlashAttention-4's compiled kernels go to the set's cache (FlashAttention-4's cache
    turned on), so the backward's job, the profile and Nsight Compute load what the forward's
    compiled; a variable the user set is kept. In a fresh process: it sets os.environ."""
    from kernellab.engine.testing import in_fresh_interpreter

    names = ["QUACK_CACHE_DIR", "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED", "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR",
             "TRITON_CACHE_DIR"]
    code = ("import json, os; from kernellab.engine import runtime; "
            f"runtime.use_run_cache({str(tmp_path / 'cache')!r}); "
            f"print(json.dumps({{k: os.environ.get(k) for k in {names!r}}}))")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    got = in_fresh_interpreter(code)
    assert got == {"QUACK_CACHE_DIR": str(tmp_path / "cache" / "quack"), "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED": "1",
                   "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR": str(tmp_path / "cache" / "fa4"),
                   "TRITON_CACHE_DIR": str(tmp_path / "cache" / "triton")}
    mine = in_fresh_interpreter(code, env={"FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED": "0"})
    assert mine["FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED"] == "0"
