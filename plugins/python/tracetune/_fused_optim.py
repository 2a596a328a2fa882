"""torch.optim.Adam, AdamW and SGD stepping every parameter in one call of the kernel pack
(kernels.optimizer = "tracetune"). The optimizer's state keeps PyTorch's layout ('step' as a
tensor, 'exp_avg', 'exp_avg_sq', 'momentum_buffer'), so state_dict() and load_state_dict()
work unchanged and a job can switch between the fused step and PyTorch's within a run.
Options the kernels do not implement (amsgrad, maximize, capturable, differentiable, sparse
or non-float32 gradients, tensors that are not contiguous) run PyTorch's step, with one
warning per reason.
"""
import ctypes
import functools

from tracetune import _kernels


def _unsupported(opt, group, params):
    import torch
    for flag in ("amsgrad", "maximize", "capturable", "differentiable"):
        if group.get(flag):
            return f"{flag}=True"
    numbers = ("lr", "weight_decay", "eps", "momentum", "dampening")
    if any(not isinstance(group.get(k, 0.0), (int, float)) for k in numbers) or \
            any(not isinstance(b, (int, float)) for b in group.get("betas", ())):
        return "tensor-valued hyperparameters"
    if isinstance(opt, torch.optim.SGD) and group.get("nesterov") and group.get("momentum", 0) == 0:
        return "nesterov without momentum"
    device = None
    for p in params:
        g = p.grad
        if p.dtype != torch.float32 or g.dtype != torch.float32:
            return f"dtype {p.dtype}"
        if g.is_sparse:
            return "sparse gradients"
        if not (p.is_contiguous() and g.is_contiguous()):
            return "tensors that are not contiguous"
        if device is None:
            device = p.device
        elif p.device != device or g.device != device:
            return "parameters on several devices"
    return _kernels.device_supported(device) if device is not None else ""


def _pointers(tensors):
    return (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])


def _adam_group(opt, group, params, decoupled):
    import torch
    exp_avg, exp_avg_sq = [], []
    step = None
    for p in params:
        state = opt.state[p]
        if len(state) == 0:
            state["step"] = torch.tensor(0.0)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        state["step"] += 1
        step = int(state["step"].item()) if step is None else step
        exp_avg.append(state["exp_avg"])
        exp_avg_sq.append(state["exp_avg_sq"])
    numels = (ctypes.c_int64 * len(params))(*[p.numel() for p in params])
    beta1, beta2 = group["betas"]
    _kernels._call(params[0].device, "adam_step_f32", _pointers(params), _pointers([p.grad for p in params]),
                   _pointers(exp_avg), _pointers(exp_avg_sq), numels, len(params), group["lr"], beta1, beta2,
                   group["eps"], group["weight_decay"], step, 1 if decoupled else 0)


def _sgd_group(opt, group, params):
    import torch
    momentum = group["momentum"]
    bufs, first = [], 0
    if momentum != 0:
        states = [opt.state[p] for p in params]
        fresh = [s.get("momentum_buffer") is None for s in states]
        if any(fresh) and not all(fresh):  # mixed: PyTorch's per-tensor rule, in two calls
            for p, is_new in zip(params, fresh):
                _sgd_group_one(opt, group, [p], is_new)
            return
        first = 1 if fresh[0] else 0
        for p, s in zip(params, states):
            if first:
                s["momentum_buffer"] = torch.empty_like(p, memory_format=torch.preserve_format)
            bufs.append(s["momentum_buffer"])
    else:
        for p in params:  # PyTorch records the (absent) buffer too
            opt.state[p]["momentum_buffer"] = None
    _sgd_call(group, params, bufs, first)


def _sgd_group_one(opt, group, params, is_new):
    import torch
    s = opt.state[params[0]]
    if is_new:
        s["momentum_buffer"] = torch.empty_like(params[0], memory_format=torch.preserve_format)
    _sgd_call(group, params, [s["momentum_buffer"]], 1 if is_new else 0)


def _sgd_call(group, params, bufs, first):
    numels = (ctypes.c_int64 * len(params))(*[p.numel() for p in params])
    _kernels._call(params[0].device, "sgd_step_f32", _pointers(params), _pointers([p.grad for p in params]),
                   _pointers(bufs) if bufs else None, numels, len(params), group["lr"], group["momentum"],
                   group["dampening"], group["weight_decay"], 1 if group["nesterov"] else 0, first)


def fused_step(opt, original_step, closure=None):
    """One optimizer step through the kernel pack; PyTorch's step where it cannot serve."""
    import torch
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    groups = []
    for group in opt.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        why = _unsupported(opt, group, params)
        if why:
            _kernels.once(f"optim-fallback:{type(opt).__name__}:{why}",
                          f"kernels.optimizer: {type(opt).__name__} with {why}: PyTorch's step is used")
            original_step(opt)  # the closure already ran
            return loss
        groups.append((group, params))
    with torch.no_grad():
        for group, params in groups:
            if not params:
                continue
            if isinstance(opt, torch.optim.SGD):
                _sgd_group(opt, group, params)
            else:
                _adam_group(opt, group, params, decoupled=isinstance(opt, torch.optim.AdamW))
    return loss


def install(cls):
    original = cls.step

    @functools.wraps(original)
    def step(self, closure=None):
        if type(self) is not cls:  # a subclass may change the update: leave it alone
            return original(self, closure)
        return fused_step(self, original, closure)

    _kernels.swap(cls, "step", step, f"kernels.optimizer: torch.optim.{cls.__name__}.step -> tracetune fused "
                                     f"{cls.__name__} step over all parameters (tuned config)")
