#!/usr/bin/env python3
"""The kernel pack inside PyTorch (Debian's CPU torch 1.13, or TT_TORCH_PYTHON's), through the Python integration:

- functions: LayerNorm and softmax + cross-entropy (outputs and gradients) and the Adam,
  AdamW and SGD steps (parameters after several steps) match PyTorch's within the fp32
  tolerances of the substitution catalogue.
- guard: the numerics guard of the fused optimizer step, on the job's own configurations:
  each is either swapped (the kernels ran) with parameters after 20 steps within 1e-5
  (relative) of PyTorch's, or refused (PyTorch's step, one warning) — AdamW, Adam with
  decoupled_weight_decay (2.x), amsgrad, maximize, per-group options, subclasses, options the
  guard does not know.
- swaps: the kernels.* settings swap torch.nn.LayerNorm, F.cross_entropy and the optimizers'
  step, each logged once; calls the kernels cannot serve (float64, label smoothing, amsgrad)
  keep PyTorch's op with one warning each; restore() puts every original back.

usage: kernels_parity_test.py KERNELS_LIB SOURCE_DIR CASE
"""
import inspect
import io
import os
import pathlib
import sys
from contextlib import redirect_stderr

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import TORCH_PYTHON, check, run_cases, run_under_torch_python  # noqa: E402,F401

run_under_torch_python()
LIB, SRC, CASE = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
os.environ["TRACETUNE_KERNELS_LIB"] = LIB
sys.path.insert(0, str(SRC / "plugins/python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TORCH_MAJOR = int(torch.__version__.split(".")[0])

from tracetune import _kernels  # noqa: E402


def close(a, b, rtol, atol):
    return torch.allclose(a, b, rtol=rtol, atol=atol), float((a - b).abs().max())


def case_functions(tmp):
    torch.manual_seed(0)
    for shape, cols in (((4, 33, 96), 96), ((7, 13), 13)):
        x = torch.randn(*shape, dtype=torch.float32) * 3 + 5
        w, b = torch.randn(cols), torch.randn(cols)
        dy = torch.randn(*shape)
        grads = []
        for fn in (lambda x, w, b: _kernels.layer_norm(x, (cols,), w, b, 1e-5),
                   lambda x, w, b: F.layer_norm(x, (cols,), w, b, 1e-5)):
            xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
            y = fn(xs, ws, bs)
            y.backward(dy)
            grads.append((y.detach(), xs.grad, ws.grad, bs.grad))
        for name, a, r in zip(("y", "dx", "dgamma", "dbeta"), grads[0], grads[1]):
            ok, err = close(a, r, 1e-4, 1e-4)
            check(f"layer_norm {shape} {name} matches torch", ok, f"max abs err {err}")
    logits = torch.randn(37, 5003) * 4
    target = torch.randint(0, 5003, (37,))
    target[5] = -100
    for reduction in ("mean", "sum", "none"):
        outs = []
        for fn in (_kernels.cross_entropy, lambda l, t, i, r: F.cross_entropy(l, t, ignore_index=i, reduction=r)):
            ls = logits.clone().requires_grad_()
            loss = fn(ls, target, -100, reduction)
            loss.backward(torch.ones_like(loss) if reduction == "none" else None)
            outs.append((loss.detach(), ls.grad))
        ok, err = close(outs[0][0], outs[1][0], 1e-5, 1e-5)
        check(f"cross_entropy {reduction} loss matches torch", ok, f"max abs err {err}")
        ok, err = close(outs[0][1], outs[1][1], 1e-4, 1e-7)
        check(f"cross_entropy {reduction} gradient matches torch", ok, f"max abs err {err}")


def optimizer_run(make, fused, steps=6):
    from tracetune import _fused_optim
    torch.manual_seed(1)
    params = [torch.randn(n, requires_grad=True) for n in (3, 0, 257, 1024)]
    opt = make(params)
    for s in range(steps):
        for i, p in enumerate(params):
            p.grad = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (s + 1) + i)
        if fused:
            _fused_optim.fused_step(opt, type(opt).step)
        else:
            opt.step()
    return [p.detach() for p in params], opt


def case_optimizers(tmp):
    makers = {
        "Adam": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1),
        "AdamW": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
        "SGD momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
        "SGD nesterov": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
        "SGD plain": lambda p: torch.optim.SGD(p, lr=0.1),
    }
    for name, make in makers.items():
        ours, opt = optimizer_run(make, True)
        ref, ref_opt = optimizer_run(make, False)
        worst = max(float((a - b).abs().max()) if a.numel() else 0.0 for a, b in zip(ours, ref))
        check(f"{name}: parameters after 6 fused steps match torch", worst < 1e-5, f"max abs err {worst}")
        ok = all(set(opt.state[p].keys()) == set(ref_opt.state[q].keys())
                 for p, q in zip(opt.param_groups[0]["params"], ref_opt.param_groups[0]["params"]) if p.numel())
        check(f"{name}: optimizer state keeps PyTorch's layout", ok)


def _guard_configs():
    """name -> (make(params), expected: "swap" or "refuse"); a 2.x option only where it exists."""
    Adam, AdamW, SGD = torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD

    class StepOverride(Adam):
        def step(self, closure=None):
            return super().step(closure)

    class InitGroupOverride(Adam):
        def _init_group(self, *args, **kwargs):
            return super()._init_group(*args, **kwargs)

    class OwnDefaults(AdamW):  # only __init__: computes AdamW with its own options
        def __init__(self, params):
            super().__init__(params, lr=5e-3, weight_decay=0.2, betas=(0.85, 0.995))

    def unknown_option(p):
        opt = Adam(p, lr=1e-2)
        opt.param_groups[0]["lookahead_k"] = 5  # what a newer PyTorch or a job could add
        return opt

    configs = {
        "AdamW": (lambda p: AdamW(p, lr=1e-2, weight_decay=0.1), "swap"),
        "Adam": (lambda p: Adam(p, lr=1e-2, weight_decay=0.1), "swap"),
        "Adam amsgrad": (lambda p: Adam(p, lr=1e-2, amsgrad=True), "refuse"),
        "Adam maximize": (lambda p: Adam(p, lr=1e-2, maximize=True), "refuse"),
        "Adam per-group options": (lambda p: Adam([{"params": p[:2]}, {"params": p[2:], "lr": 3e-3, "weight_decay": 0.05,
                                                                         "betas": (0.8, 0.99), "eps": 1e-6}], lr=1e-2),
                                   "swap"),
        "SGD per-group nesterov": (lambda p: SGD([{"params": p[:2]}, {"params": p[2:], "nesterov": True, "dampening": 0}],
                                                 lr=0.05, momentum=0.9, weight_decay=1e-3), "swap"),
        "SGD maximize": (lambda p: SGD(p, lr=0.05, maximize=True), "refuse"),
        "option unknown to the guard": (unknown_option, "refuse"),
        "subclass overriding step": (lambda p: StepOverride(p, lr=1e-2), "refuse"),
        "subclass overriding _init_group": (lambda p: InitGroupOverride(p, lr=1e-2), "refuse"),
        "subclass setting only its options": (OwnDefaults, "swap"),
    }
    params = inspect.signature(Adam.__init__).parameters
    if "decoupled_weight_decay" in params:
        configs["Adam decoupled_weight_decay"] = (
            lambda p: Adam(p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True), "swap")
    if "fused" in params and TORCH_MAJOR >= 2:
        configs["Adam fused=True (PyTorch's own fused step)"] = (lambda p: Adam(p, lr=1e-2, fused=True), "refuse")
        configs["Adam tensor lr"] = (lambda p: Adam(p, lr=torch.tensor(1e-2), foreach=False), "refuse")
    return configs


def _run_steps(make, steps=20):
    torch.manual_seed(3)
    params = [torch.randn(n, requires_grad=True) for n in (5, 257, 1024, 33)]
    opt = make(params)
    for s in range(steps):
        for i, p in enumerate(params):
            p.grad = torch.sin(torch.arange(p.numel(), dtype=torch.float32) * (s + 1) + i) * (1 + s % 3)
        opt.step()
    return [p.detach().clone() for p in params]


def case_guard(tmp):
    from tracetune import _fused_optim
    calls = []
    real_call = _kernels._call
    _kernels._call = lambda device, name, *a: (calls.append(name), real_call(device, name, *a))[1]
    for name, (make, expected) in _guard_configs().items():
        ref = _run_steps(make)
        err = io.StringIO()
        with redirect_stderr(err):
            _fused_optim.install(torch)
            calls.clear()
            ours = _run_steps(make)
            _kernels.restore()
        ran = bool(calls)
        rel = max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-12)) for a, b in zip(ours, ref))
        warned = "PyTorch's step is used" in err.getvalue()
        if expected == "swap":
            check(f"guard: {name}: swapped (the kernels ran)", ran and not warned, err.getvalue())
        else:
            check(f"guard: {name}: refused with one warning", not ran and err.getvalue().count("PyTorch's step is used") == 1,
                  err.getvalue())
        check(f"guard: {name}: parameters after 20 steps within 1e-5 relative of PyTorch's", rel <= 1e-5, f"{rel:.3g}")
    _kernels._call = real_call


def case_swaps(tmp):
    from tracetune import _apply
    err = io.StringIO()
    with redirect_stderr(err):
        _apply.apply({"kernels.layernorm": "tracetune", "kernels.cross_entropy": "tracetune",
                      "kernels.optimizer": "tracetune"})
        ln = torch.nn.LayerNorm(16)
        x = torch.randn(3, 16)
        y = ln(x)
        y64 = torch.nn.LayerNorm(16).double()(x.double())
        torch.nn.LayerNorm(16).double()(x.double())
        loss = F.cross_entropy(torch.randn(4, 10), torch.tensor([1, 2, 3, 4]))
        F.cross_entropy(torch.randn(4, 10), torch.tensor([1, 2, 3, 4]), label_smoothing=0.1)
        p = torch.randn(5, requires_grad=True)
        p.grad = torch.ones(5)
        torch.optim.Adam([p], amsgrad=True).step()
        torch.optim.Adam([p], amsgrad=True).step()
        adamw_calls, real_call = [], _kernels._call
        _kernels._call = lambda device, name, *a: (adamw_calls.append(name), real_call(device, name, *a))[1]
        torch.optim.AdamW([p], lr=1e-3).step()
        _kernels._call = real_call
    log = err.getvalue()
    print(log)
    check("LayerNorm swap logged once", log.count("torch.nn.LayerNorm -> tracetune") == 1, log)
    check("cross_entropy swap logged once", log.count("cross_entropy -> tracetune") == 1, log)
    own_steps = [c for c in (torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD) if "step" in c.__dict__]
    adamw_swap = "torch.optim.AdamW.step -> tracetune" if torch.optim.AdamW in own_steps else "(and AdamW: Adam's step"
    check("the swap that covers AdamW logged once", log.count(adamw_swap) == 1, log)
    check("an AdamW made after the swap steps through the kernels", adamw_calls == ["adam_step_f32"], str(adamw_calls))
    check("float64 LayerNorm keeps PyTorch's kernel, one warning", log.count("dtype torch.float64") == 1, log)
    check("label smoothing keeps PyTorch's cross_entropy", "label smoothing" in log, log)
    check("amsgrad keeps PyTorch's step, one warning", log.count("amsgrad=True") == 1, log)
    check("swapped LayerNorm computes", torch.allclose(y, F.layer_norm(x, (16,), ln.weight, ln.bias), atol=1e-5))
    check("float64 result is PyTorch's", y64.dtype == torch.float64)
    check("swapped cross_entropy computes", loss.dim() == 0 and torch.isfinite(loss))
    check("three kinds of swaps in effect", len(_kernels.swapped()) == 2 + len(own_steps), str(_kernels.swapped()))
    undone = _kernels.restore()
    check("restore() undoes every swap", undone == 2 + len(own_steps) and not _kernels.swapped(), str(undone))
    check("originals are back", not getattr(torch.nn.LayerNorm.forward, "_tracetune_swapped", False)
          and not getattr(F.cross_entropy, "_tracetune_swapped", False)
          and not getattr(torch.optim.AdamW.step, "_tracetune_swapped", False))


def case_cuda(tmp):
    """On a GPU machine (by hand; not registered in ctest): the CUDA library against torch's
    CUDA ops, and a timing line per op. TRACETUNE_KERNELS_CUDA_LIB names the library."""
    if not torch.cuda.is_available():
        print("no CUDA device: skipped")
        sys.exit(77)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    x, w, b, dy = torch.randn(4096, 1024, device=dev), torch.randn(1024, device=dev), torch.randn(1024, device=dev), \
        torch.randn(4096, 1024, device=dev)
    outs = []
    for fn in (lambda x, w, b: _kernels.layer_norm(x, (1024,), w, b), lambda x, w, b: F.layer_norm(x, (1024,), w, b)):
        xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
        y = fn(xs, ws, bs)
        y.backward(dy)
        outs.append((y.detach(), xs.grad, ws.grad, bs.grad))
    for name, a, r in zip(("y", "dx", "dgamma", "dbeta"), *outs):
        ok, err = close(a, r, 1e-3, 1e-3)
        check(f"cuda layer_norm {name} matches torch", ok, f"max abs err {err}")
    logits, target = torch.randn(2048, 50257, device=dev) * 3, torch.randint(0, 50257, (2048,), device=dev)
    res = []
    for fn in (_kernels.cross_entropy, lambda l, t, i, r: F.cross_entropy(l, t)):
        ls = logits.clone().requires_grad_()
        loss = fn(ls, target, -100, "mean")
        loss.backward()
        res.append((loss.detach(), ls.grad))
    check("cuda cross_entropy loss matches torch", close(res[0][0], res[1][0], 1e-5, 1e-5)[0])
    check("cuda cross_entropy gradient matches torch", close(res[0][1], res[1][1], 1e-4, 1e-7)[0])
    from tracetune import _fused_optim
    params = [torch.randn(n, device=dev, requires_grad=True) for n in (1 << 20, 4096, 7)]
    ref = [p.detach().clone().requires_grad_() for p in params]
    opts = torch.optim.AdamW(params, lr=1e-3), torch.optim.AdamW(ref, lr=1e-3)
    for s in range(5):
        for p, q in zip(params, ref):
            p.grad = torch.sin(torch.arange(p.numel(), device=dev, dtype=torch.float32) + s)
            q.grad = p.grad.clone()
        _fused_optim.fused_step(opts[0], type(opts[0]).step)
        opts[1].step()
    worst = max(float((p - q).abs().max()) for p, q in zip(params, ref))
    check("cuda AdamW: parameters after 5 fused steps match torch", worst < 1e-5, str(worst))


if __name__ == "__main__":
    run_cases({"functions": case_functions, "optimizers": case_optimizers, "swaps": case_swaps, "guard": case_guard, "cuda": case_cuda},
              only=[CASE])
