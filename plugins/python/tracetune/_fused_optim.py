"""torch.optim.Adam, AdamW and SGD stepping every parameter in one call of the kernel pack
(kernels.optimizer = "tracetune"). The optimizer's state keeps PyTorch's layout ('step' as a
tensor, 'exp_avg', 'exp_avg_sq', 'momentum_buffer'), so state_dict() and load_state_dict()
work unchanged and a job can switch between the fused step and PyTorch's within a run.

The numerics guard: the fused step runs only for the exact configurations it was written for.
- The algorithm is found from what the optimizer computes, not from its name: the class in its
  MRO that defines the step PyTorch would run (Adam, AdamW where it has a step of its own, as
  in 1.13, or SGD). A subclass on the way there may only re-define __init__/__setstate__ (the
  options it sets are checked below); one that defines anything else (a step, _init_group, a
  helper) may compute something else, and keeps PyTorch's step. In PyTorch 2.x AdamW has no
  step: it is Adam with the param-group option decoupled_weight_decay=True.
- Every option of every param group must be one this file knows, with a value the kernels
  implement (OPTIONS); an option it does not know (a newer PyTorch's, or one a job added)
  keeps PyTorch's step.
- Every parameter and gradient: float32, dense, contiguous, one device the kernels run on.
Whatever fails keeps PyTorch's step, with one warning per reason.
"""
import ctypes
import functools
import numbers

from tracetune import _kernels, _log

# Accepted values per option: a predicate on the value. Options that only select PyTorch's own
# implementation (foreach) or that a scheduler adds (initial_lr) change nothing we compute.
def _real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _false(v):
    return v is False or v is None


def _flag(v):
    return isinstance(v, bool)


def _betas(v):
    return isinstance(v, (tuple, list)) and len(v) == 2 and all(_real(b) for b in v)


_COMMON = {"lr": _real, "weight_decay": _real, "maximize": _false, "foreach": lambda v: v is None or _flag(v),
           "differentiable": _false, "fused": _false, "initial_lr": _real,
           "param_names": lambda v: isinstance(v, (list, tuple))}
OPTIONS = {
    "adam": {**_COMMON, "betas": _betas, "eps": _real, "amsgrad": _false, "capturable": _false,
             "decoupled_weight_decay": _flag},
    "adamw": {**_COMMON, "betas": _betas, "eps": _real, "amsgrad": _false, "capturable": _false},
    "sgd": {**_COMMON, "momentum": _real, "dampening": _real, "nesterov": _flag},
}
# what a refused value means, for the warning
_WHY_VALUE = {"maximize": "maximize=True", "amsgrad": "amsgrad=True", "capturable": "capturable=True",
              "differentiable": "differentiable=True", "fused": "fused=True (PyTorch's fused step)"}
# class attributes a subclass may define without changing what the step computes
_HARMLESS = {"__init__", "__setstate__", "__repr__", "__doc__", "__module__", "__qualname__", "__dict__",
             "__weakref__", "__annotations__", "__firstlineno__", "__static_attributes__", "__orig_bases__",
             "__parameters__", "__slots__"}

_algorithms = {}     # class whose own step the kernels implement -> "adam" | "adamw" | "sgd"
_known_steps = set()  # those steps as PyTorch defines them, and our swaps of them
_by_type = {}         # optimizer type -> (algorithm or None, why not)


def _chain(fn):
    """`fn` and what it wraps (functools.wraps' __wrapped__, our swaps' _tracetune_original)."""
    out = []
    while fn is not None and len(out) < 16:
        out.append(fn)
        fn = getattr(fn, "_tracetune_original", None) or getattr(fn, "__wrapped__", None)
    return out


def _own_step(cls):
    """cls's step when it defines one of its own; None when it has none or only PyTorch's
    profile hook around a base class's step (set on the class of the first instance made)."""
    step = cls.__dict__.get("step")
    if step is None:
        return None
    inherited = {id(f) for base in cls.__mro__[1:] for f in _chain(base.__dict__.get("step"))}
    return None if any(id(f) in inherited for f in _chain(step)) else step


def _learn(torch):
    if _algorithms:
        return
    for cls, algo in ((torch.optim.Adam, "adam"), (torch.optim.AdamW, "adamw"), (torch.optim.SGD, "sgd")):
        step = _own_step(cls)  # PyTorch 2.x's AdamW has none: it runs Adam's
        if step is not None:
            _algorithms[cls] = algo
            _known_steps.add(step)


def _is_known_step(fn):
    """True when `fn` is, or wraps through functools.wraps chains (PyTorch's profile hook, the
    step markers, our swap), a step of _known_steps."""
    return any(f in _known_steps for f in _chain(fn))


def algorithm(opt):
    """(algorithm, '') when the kernels implement what `opt`'s step computes, else (None, why)."""
    import torch
    _learn(torch)
    kind = type(opt)
    if kind not in _by_type:
        _by_type[kind] = _resolve(kind)
    return _by_type[kind]


def _resolve(kind):
    for klass in kind.__mro__:
        if klass in _algorithms:
            return _algorithms[klass], ""
        for name, value in klass.__dict__.items():
            if name in _HARMLESS or (name == "step" and _is_known_step(value)):
                continue
            return None, f"{klass.__name__} defines {name}"
    return None, "not an optimizer the kernels implement"


def _group_unsupported(algo, group):
    accepted = OPTIONS[algo]
    for key, value in group.items():
        if key == "params":
            continue
        if key not in accepted:
            return f"option {key!r} unknown to the kernels"
        if not accepted[key](value):
            if hasattr(value, "dim"):
                return f"tensor-valued {key}"
            return _WHY_VALUE.get(key) or f"{key}={value!r}"
    if algo == "sgd" and group.get("nesterov") and group.get("momentum", 0) == 0:
        return "nesterov without momentum"
    return ""


def _tensors_unsupported(params):
    import torch
    device = None
    for p in params:
        g = p.grad
        if p.dtype != torch.float32 or g.dtype != torch.float32:
            return f"dtype {p.dtype if p.dtype != torch.float32 else g.dtype}"
        if g.is_sparse:
            return "sparse gradients"
        if not (p.is_contiguous() and g.is_contiguous()):
            return "tensors that are not contiguous"
        if device is None:
            device = p.device
        elif p.device != device or g.device != device:
            return "parameters on several devices"
    return _kernels.device_supported(device) if device is not None else ""


def unsupported(opt):
    """'' when the fused step computes exactly what `opt.step()` would, else why not."""
    algo, why = algorithm(opt)
    if algo is None:
        return why
    for group in opt.param_groups:
        why = _group_unsupported(algo, group) or \
            _tensors_unsupported([p for p in group["params"] if p.grad is not None])
        if why:
            return why
    return ""


def _json_value(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if hasattr(v, "dim"):  # a tensor-valued option: kept as such, so the guard refuses it again
        return {"tensor": float(v.detach().float().mean()) if v.numel() else 0.0}
    return repr(v)


def describe(opt):
    """The optimizer's configuration as plain data: its class, the algorithm the guard finds
    (None: refused, with why), and per param group every option and the tensors it holds."""
    algo, why = algorithm(opt)
    groups = []
    for group in opt.param_groups:
        g = {k: _json_value(v) for k, v in group.items() if k not in ("params", "param_names")}
        g["tensors"] = len(group["params"])
        g["elements"] = sum(p.numel() for p in group["params"])
        groups.append(g)
    return {"class": type(opt).__name__, "algorithm": algo, "refused": why, "groups": groups}


def from_description(desc, params):
    """An optimizer of the described configuration over `params` (split over its groups in
    proportion to the tensors each held): the job's own, for bench kernels. Its class is the
    torch.optim class of the algorithm (a job's subclass was refused when it was described)."""
    import torch
    classes = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}
    cls = getattr(torch.optim, desc.get("class", ""), None) or classes.get(desc.get("algorithm"))
    if cls is None:
        raise ValueError(f"optimizer {desc.get('class')!r} is not one torch.optim has")
    groups, left = [], list(params)
    total = sum(max(g.get("tensors", 1), 1) for g in desc["groups"]) or 1
    for i, g in enumerate(desc["groups"]):
        share = len(params) if i == len(desc["groups"]) - 1 else max(1, round(len(params) * g.get("tensors", 1) / total))
        take, left = left[:share], left[share:]
        options = {k: (tuple(v) if k == "betas" else torch.tensor(v["tensor"]) if isinstance(v, dict) else v)
                   for k, v in g.items() if k not in ("tensors", "elements")}
        groups.append({"params": take, **options})
    groups = [g for g in groups if g["params"]]
    return cls(groups)


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
    elif _sgd_records_absent_buffer():
        for p in params:
            opt.state[p]["momentum_buffer"] = None
    _sgd_call(group, params, bufs, first)


_sgd_layout = []


def _sgd_records_absent_buffer():
    """Whether this PyTorch's SGD without momentum stores momentum_buffer=None in the state
    (1.x does, 2.x does not): asked of PyTorch's own step once, so state_dict() keeps its layout."""
    if not _sgd_layout:
        import torch
        p = torch.zeros(1, requires_grad=True)
        p.grad = torch.zeros(1)
        probe = torch.optim.SGD([p], lr=0.1)
        # the innermost function: PyTorch's own step, under none of the wrappers (step
        # markers, profile hooks) that would count the probe as the job's step
        with torch.no_grad():
            _chain(torch.optim.SGD.__dict__["step"])[-1](probe)
        _sgd_layout.append("momentum_buffer" in probe.state[p])
    return _sgd_layout[0]


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
    """One optimizer step through the kernel pack; PyTorch's step (original_step) wherever the
    guard finds anything the kernels were not written for."""
    import torch
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    why = unsupported(opt)
    if why:
        _log.once(f"optim-fallback:{type(opt).__name__}:{why}",
                      f"kernels.optimizer: {type(opt).__name__} with {why}: PyTorch's step is used")
        original_step(opt)  # the closure already ran
        return loss
    algo = algorithm(opt)[0]
    with torch.no_grad():
        for group in opt.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            if algo == "sgd":
                _sgd_group(opt, group, params)
            else:
                _adam_group(opt, group, params, decoupled=algo == "adamw" or group.get("decoupled_weight_decay", False))
    return loss


def _classes_to_swap(torch):
    """The classes whose `step` attribute the job's optimizers call: those with a step the
    kernels implement, and any subclass holding PyTorch's profile hook around one of them
    (made when an instance was built before the swap)."""
    out, pending = [], list(_algorithms)
    while pending:
        cls = pending.pop(0)
        step = cls.__dict__.get("step")
        if cls not in out and step is not None and (cls in _algorithms or _is_known_step(step)):
            out.append(cls)
        pending.extend(cls.__subclasses__())
    return out


def install(torch):
    """Swap the step of every class whose step the kernels implement (Adam, SGD, and AdamW
    where it has its own); subclasses reach the swap and pass the guard by what they compute."""
    _learn(torch)
    for cls in _classes_to_swap(torch):
        original = cls.step

        @functools.wraps(original)
        def step(self, closure=None, _original=original):
            return fused_step(self, _original, closure)

        name = cls.__name__
        covers = " (and AdamW: Adam's step with decoupled weight decay in this PyTorch)" \
            if name == "Adam" and torch.optim.AdamW not in _algorithms else ""
        _kernels.swap(cls, "step", step, f"kernels.optimizer: torch.optim.{name}.step -> tracetune fused {name} step "
                                         f"over all parameters{covers} (tuned config)")
        _known_steps.add(step)
