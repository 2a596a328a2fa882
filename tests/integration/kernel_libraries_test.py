#!/usr/bin/env python3
"""Kernel libraries the job's environment may have (Liger Kernel, apex, Transformer Engine):
detected, never installed; selected by kernels.layernorm / kernels.cross_entropy; a call their
kernels cannot take (CPU tensors here: they are CUDA libraries) keeps PyTorch's op with one
warning; a library that is not installed leaves the op alone with one warning.

Stand-ins for the libraries (tiny packages written to a temporary directory, with the same
module paths and call signatures as the real ones) are used only inside this test.

usage: kernel_libraries_test.py SOURCE_DIR CASE   (CASE: detect, fallback, library, missing, bench)
"""
import io
import os
import pathlib
import sys
import tempfile
from contextlib import redirect_stderr

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import TORCH_PYTHON as PY, run_under_torch_python  # noqa: E402

run_under_torch_python()  # the job's Python: Debian's (torch 1.13) or TT_TORCH_PYTHON's
SRC, CASE = pathlib.Path(sys.argv[1]), sys.argv[2]
sys.path.insert(0, str(SRC / "plugins/python"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# Stand-ins: same module paths and signatures as Liger Kernel and apex; count their calls.
FAKES = {
    "liger_kernel/__init__.py": "CALLS = []\n",
    "liger_kernel/transformers/__init__.py": """
import torch
import liger_kernel


class LigerCrossEntropyLoss(torch.nn.Module):
    def __init__(self, ignore_index=-100, reduction="mean"):
        super().__init__()
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, logits, target):
        liger_kernel.CALLS.append("cross_entropy")
        logp = torch.log_softmax(logits, dim=-1)
        return torch.nn.functional.nll_loss(logp, target, ignore_index=self.ignore_index, reduction=self.reduction)
""",
    "liger_kernel/transformers/functional.py": """
import torch
import liger_kernel


def liger_layer_norm(X, W, B, eps):
    liger_kernel.CALLS.append("layer_norm")
    return torch.nn.functional.layer_norm(X, (X.shape[-1],), W, B, eps)
""",
    "apex/__init__.py": "CALLS = []\n",
    "apex/normalization/__init__.py": "",
    "apex/normalization/fused_layer_norm.py": """
import torch
import apex


def fused_layer_norm_affine(input, weight, bias, normalized_shape, eps=1e-6):
    apex.CALLS.append("layer_norm")
    return torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)


def fused_layer_norm(input, normalized_shape, eps=1e-6):
    apex.CALLS.append("layer_norm")
    return torch.nn.functional.layer_norm(input, normalized_shape, None, None, eps)
""",
}


def write_fakes(root):
    for rel, text in FAKES.items():
        path = pathlib.Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sys.path.insert(0, str(root))


def apply_logged(settings, body):
    from tracetune import _apply
    err = io.StringIO()
    with redirect_stderr(err):
        _apply.apply(settings)
        result = body()
    print(err.getvalue())
    return result, err.getvalue()


def layer_norm_and_loss():
    torch.manual_seed(0)
    ln = torch.nn.LayerNorm(16)
    x = torch.randn(4, 16)
    logits, target = torch.randn(4, 10), torch.tensor([1, 2, 3, 4])
    return (ln(x), F.layer_norm(x, (16,), ln.weight, ln.bias), F.cross_entropy(logits, target),
            F.nll_loss(torch.log_softmax(logits, -1), target))


def case_detect(tmp):
    from tracetune import _libraries
    check("nothing detected without the libraries", all(v is None for v in _libraries.detect().values()),
          _libraries.detect())
    write_fakes(tmp)
    found = _libraries.detect()
    check("Liger Kernel and apex detected, Transformer Engine not",
          found["liger"] is not None and found["apex"] is not None and found["te"] is None, found)
    line = _libraries.describe()
    check("the report says what is missing and that nothing is installed by us",
          "transformer_engine not installed" in line and "never installed" in line, line)


def case_fallback(tmp):
    """The real libraries are CUDA-only: on CPU tensors the swap falls back, once per reason."""
    write_fakes(tmp)
    import apex
    import liger_kernel
    (y, ref, loss, ref_loss), log = apply_logged({"kernels.layernorm": "liger", "kernels.cross_entropy": "liger"},
                                                 layer_norm_and_loss)
    check("swaps logged", "-> Liger Kernel LayerNorm" in log and "-> Liger Kernel cross-entropy" in log, log)
    check("CPU tensors: one warning each, PyTorch's ops kept",
          log.count("liger_kernel runs on cuda tensors, not cpu") == 2 and liger_kernel.CALLS == [], log)
    check("results are PyTorch's", torch.equal(y, ref) and torch.equal(loss, ref_loss))
    check("apex untouched", apex.CALLS == [])


def case_library(tmp):
    """With the libraries' device list widened to the CPU (a mock, in this test only), the swaps
    call the library and give PyTorch's results."""
    write_fakes(tmp)
    import apex
    import liger_kernel
    from tracetune import _kernels, _libraries
    for impl in ("liger", "apex"):
        module, _, dtypes = _libraries.LIBRARIES[impl]
        _libraries.LIBRARIES[impl] = (module, ("cuda", "cpu"), dtypes)
    (y, ref, loss, ref_loss), log = apply_logged({"kernels.layernorm": "liger", "kernels.cross_entropy": "liger"},
                                                 layer_norm_and_loss)
    check("Liger's LayerNorm and cross-entropy called", liger_kernel.CALLS == ["layer_norm", "cross_entropy"],
          liger_kernel.CALLS)
    check("Liger results match PyTorch's", torch.allclose(y, ref, atol=1e-6) and torch.allclose(loss, ref_loss))
    check("restore() undoes both swaps", _kernels.restore() == 2)
    _kernels.install_layernorm(torch, "apex")  # settings apply when torch is imported: install directly
    y, ref, _, _ = layer_norm_and_loss()
    check("apex's fused LayerNorm called", apex.CALLS == ["layer_norm"], apex.CALLS)
    check("apex result matches PyTorch's", torch.allclose(y, ref, atol=1e-6))


def case_missing(tmp):
    (y, ref, loss, ref_loss), log = apply_logged({"kernels.layernorm": "liger", "kernels.cross_entropy": "liger"},
                                                 layer_norm_and_loss)
    from tracetune import _kernels
    check("not installed: one warning per knob, nothing swapped",
          log.count("liger_kernel is not installed in this environment (tracetune never installs it)") == 2
          and not _kernels.swapped(), log)
    check("results are PyTorch's", torch.equal(y, ref) and torch.equal(loss, ref_loss))


def case_bench(tmp):
    from tracetune import _kernel_bench
    impl = {"name": "liger", "devices": ["cuda"], "requires": "liger_kernel"}
    check("bench: a CUDA library is skipped on CPU", _kernel_bench.unavailable(impl, "cpu") == "not for cpu")
    impl["devices"] = ["cpu"]
    why = _kernel_bench.unavailable(impl, "cpu")
    check("bench: a library that is not installed is skipped with the reason",
          why == "liger_kernel is not installed in this environment", why)
    write_fakes(tmp)
    check("bench: an installed library can run", _kernel_bench.unavailable(impl, "cpu") == "")
    cat = _kernel_bench.load_catalogue(str(SRC / "tuner/knobs/substitutions.toml"), str(SRC / "tuner/knobs/knobs.toml"))
    impls = {(s["id"], i["name"]) for s in cat["substitutions"] for i in s["impl"]}
    check("catalogue: Liger and apex implementations listed",
          {("layernorm", "liger"), ("layernorm", "apex"), ("cross_entropy", "liger")} <= impls, impls)


CASES = {"detect": case_detect, "fallback": case_fallback, "library": case_library, "missing": case_missing,
         "bench": case_bench}

with tempfile.TemporaryDirectory() as tmp:
    CASES[CASE](tmp)
finish()
