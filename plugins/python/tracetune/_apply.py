"""Tuned framework settings applied inside the job, without code changes.

`tracetune run --config tuned.toml` checks the config against the knob catalogue, writes the
Python knobs to a private JSON file and names it in TRACETUNE_APPLY; sitecustomize then calls
`apply()`, which registers import hooks (torch is never imported by us) that apply each
setting when the job imports the part of torch it concerns. Users who prefer one line in
their script call `tracetune.apply()` (same file) or `tracetune.apply("tuned.toml")`.

The rule, everywhere: a setting in the config wins over the value the job's code passes
(the user asked for the tuned value), and each override is logged once per process on
stderr. What cannot be applied on the running PyTorch version is skipped with one warning.
See docs/tuning.md for the per-knob details.
"""
import functools
import inspect
import json
import os
import sys
import threading

from tracetune import _imphook

# The Python knobs of tuner/knobs/knobs.toml: id -> (type, min or choices, max). A test
# (tests/integration/python_apply_test.py) checks this table against the catalogue.
SPEC = {
    "dataloader.num_workers": ("int", 0, 512),
    "dataloader.pin_memory": ("bool", None, None),
    "dataloader.prefetch_factor": ("int", 1, 64),
    "dataloader.persistent_workers": ("bool", None, None),
    "ddp.bucket_cap_mb": ("float", 1, 2048),
    "ddp.gradient_as_bucket_view": ("bool", None, None),
    "ddp.static_graph": ("bool", None, None),
    "ddp.comm_hook": ("enum", ("none", "fp16", "bf16", "powersgd", "hierarchical"), None),
    "torch.tf32_matmul": ("bool", None, None),
    "torch.cudnn_tf32": ("bool", None, None),
    "torch.cudnn_benchmark": ("bool", None, None),
    "torch.matmul_precision": ("enum", ("highest", "high", "medium"), None),
    "amp.dtype": ("enum", ("none", "bf16", "fp16"), None),
    "compile.mode": ("enum", ("none", "default", "reduce-overhead", "max-autotune"), None),
    "sdpa.backend": ("enum", ("default", "math", "flash", "efficient", "cudnn"), None),
    "memory.channels_last": ("bool", None, None),
    "optimizer.foreach": ("bool", None, None),
    "optimizer.fused": ("bool", None, None),
    "torch.num_threads": ("int", 1, 1024),
    "kernels.layernorm": ("enum", ("stock", "tracetune", "liger", "apex"), None),
    "kernels.cross_entropy": ("enum", ("stock", "tracetune", "liger"), None),
    "kernels.optimizer": ("enum", ("stock", "tracetune"), None),
}
# knob id -> the values that keep numerics unchanged (the catalogue's `safe`)
NUMERICS = {"ddp.comm_hook": ("none", "hierarchical"), "torch.tf32_matmul": (False,), "torch.cudnn_tf32": (False,),
            "amp.dtype": ("none",), "torch.matmul_precision": ("highest",)}

settings = {}     # knob id -> value in effect in this process
_lock = threading.Lock()
_hooks_installed = False


from tracetune._log import once as _once, say as _say  # noqa: E402


def check(knob, value):
    """The value if it is allowed for `knob`, else ValueError (same rules as the catalogue)."""
    spec = SPEC.get(knob)
    if spec is None:
        raise ValueError(f"{knob} is not a Python knob")
    kind, lo, hi = spec
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{knob} = {value!r}: expected true or false")
    elif kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"{knob} = {value!r}: expected an integer from {lo} to {hi}")
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            raise ValueError(f"{knob} = {value!r}: expected a number from {lo} to {hi}")
        value = float(value)
    elif kind == "enum":
        if value not in lo:
            raise ValueError(f"{knob} = {value!r}: expected one of {', '.join(lo)}")
    return value


def _read(config):
    """Settings from a dict, the JSON file `tracetune run` writes, or a tuned.toml."""
    if isinstance(config, dict):
        return dict(config), False
    path = os.fspath(config)
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".json"):
        doc = json.loads(data)
        if doc.get("format") != "tracetune-apply":
            raise ValueError(f"{path}: not a tracetune settings file")
        return doc.get("settings", {}), True  # checked by `tracetune run`, numerics included
    import tomllib  # Python 3.11+; older interpreters use `tracetune run`, which writes JSON
    doc = tomllib.loads(data.decode())
    flat = {}

    def walk(table, prefix):
        for k, v in table.items():
            key = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                walk(v, key)
            else:
                flat[key] = v
    walk(doc.get("settings", {}), "")
    if doc.get("meta", {}).get("numerics") is True:
        return flat, True
    for knob, safe in NUMERICS.items():
        if knob in flat and flat[knob] not in safe:
            raise ValueError(f"{path}: {knob} = {flat[knob]!r} changes numerics; add 'numerics = true' to [meta] to allow it")
    return flat, True


def apply(config=None):
    """Apply tuned framework settings in this process (and, through the import hooks, to the
    parts of torch imported later). `config`: None for $TRACETUNE_APPLY (set by `tracetune
    run`), a path to a tuned.toml or to the JSON file `tracetune run` writes, or a dict
    {knob id: value}. Knobs that only work from outside the process (environment variables,
    the NCCL table) are reported and left to `tracetune run`. Returns the settings in effect."""
    if config is None:
        config = os.environ.get("TRACETUNE_APPLY")
        if not config:
            _once("no-config", "tracetune.apply(): no config given and TRACETUNE_APPLY is not set; nothing applied")
            return dict(settings)
    raw, _ = _read(config)
    new = {}
    for knob, value in raw.items():
        if knob not in SPEC:
            _once(f"outside:{knob}", f"{knob}: not a framework setting; apply it with `tracetune run --config` (skipped)")
            continue
        new[knob] = check(knob, value)
    with _lock:
        settings.update(new)
    _install_hooks()
    return dict(settings)


def _install_hooks():
    global _hooks_installed
    with _lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    _imphook.on_import("torch", _apply_torch)
    _imphook.on_import("torch.utils.data.dataloader", _patch_dataloader)
    _imphook.on_import("torch.nn.parallel.distributed", _patch_ddp)
    _imphook.on_import("torch.optim", _patch_optimizers)


# ---------------------------------------------------------------- torch globals

def _apply_torch(torch):
    if "torch.tf32_matmul" in settings and "torch.matmul_precision" in settings:
        _once("tf32-vs-precision", "torch.tf32_matmul: not applied, torch.matmul_precision sets the same switch")
    elif "torch.tf32_matmul" in settings:
        torch.backends.cuda.matmul.allow_tf32 = settings["torch.tf32_matmul"]
    if "torch.matmul_precision" in settings:
        _apply_matmul_precision(torch)
    if "sdpa.backend" in settings:
        _apply_sdpa_backend(torch)
    if "torch.cudnn_tf32" in settings:
        torch.backends.cudnn.allow_tf32 = settings["torch.cudnn_tf32"]
    if "torch.cudnn_benchmark" in settings:
        torch.backends.cudnn.benchmark = settings["torch.cudnn_benchmark"]
    if "torch.num_threads" in settings:
        _patch_set_num_threads(torch)
    if settings.get("compile.mode", "none") != "none" and not hasattr(torch, "compile"):
        _once("compile", f"compile.mode: torch.compile needs PyTorch 2.0 or newer (this is {torch.__version__}); not applied")
    if _model_settings():
        _patch_first_model(torch)
    _apply_kernels(torch)
    if settings.get("amp.dtype") == "fp16":
        _once("amp-fp16", "amp.dtype = fp16: not applied (fp16 needs a GradScaler in the training loop); use bf16 or add autocast in code")


def _apply_matmul_precision(torch):
    value = settings["torch.matmul_precision"]
    if not hasattr(torch, "set_float32_matmul_precision"):
        _once("matmul-precision", f"torch.matmul_precision: needs PyTorch 1.12 or newer (this is {torch.__version__}); "
                                  "not applied")
        return
    torch.set_float32_matmul_precision(value)
    _once("matmul-precision-on", f"torch.set_float32_matmul_precision({value!r}) (tuned config)")


# sdpa.backend value -> its torch.backends.cuda switch (process-wide; the CPU dispatch reads them too)
_SDPA_SWITCHES = {"math": "enable_math_sdp", "flash": "enable_flash_sdp", "efficient": "enable_mem_efficient_sdp",
                  "cudnn": "enable_cudnn_sdp"}


def _set_sdpa(torch, value):
    """Enables `value`'s implementation and math (the fallback for inputs a fused kernel does
    not take), the other fused ones off; "default" enables all."""
    for name, fn in _SDPA_SWITCHES.items():
        switch = getattr(torch.backends.cuda, fn, None)
        if switch is not None:
            switch(value == "default" or name in (value, "math"))


def _apply_sdpa_backend(torch):
    value = settings["sdpa.backend"]
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        _once("sdpa", f"sdpa.backend = {value}: scaled_dot_product_attention needs PyTorch 2.0 or newer "
                      f"(this is {torch.__version__}); not applied")
        return
    if value != "default" and not hasattr(torch.backends.cuda, _SDPA_SWITCHES[value]):
        _once("sdpa", f"sdpa.backend = {value}: this PyTorch ({torch.__version__}) has no such implementation; not applied")
        return
    _set_sdpa(torch, value)
    allowed = {"default": "every implementation", "math": "math only"}.get(value, f"{value}, math for inputs it does not take")
    _once("sdpa-on", f"sdpa.backend = {value}: scaled_dot_product_attention may use {allowed} (tuned config)")


def _apply_kernels(torch):
    """The kernels.* substitutions (plugins/python/tracetune/_kernels.py): our kernel pack, or a
    library the environment has (_libraries.py)."""
    wanted = {k: settings[k] for k in ("kernels.layernorm", "kernels.cross_entropy", "kernels.optimizer")
              if settings.get(k, "stock") != "stock"}
    if not wanted:
        return
    from tracetune import _fused_optim, _kernels
    if "tracetune" in wanted.values() and _kernels.library("cpu") is None:
        _once("kernels-lib", f"kernels.*: {_kernels.unavailable('cpu')}; PyTorch's operators are kept")
        wanted = {k: v for k, v in wanted.items() if v != "tracetune"}
    install = {"kernels.layernorm": _kernels.install_layernorm, "kernels.cross_entropy": _kernels.install_cross_entropy,
               "kernels.optimizer": lambda torch, impl: _fused_optim.install(torch)}
    for knob, impl in wanted.items():
        install[knob](torch, impl)


def _patch_set_num_threads(torch):
    original = torch.set_num_threads
    if getattr(original, "_tracetune_wrapped", False):
        return

    @functools.wraps(original)
    def set_num_threads(n):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        wanted = settings.get("torch.num_threads")
        if wanted is None or caller.startswith("torch."):  # torch's own calls (DataLoader workers use 1)
            return original(n)
        if n != wanted:
            _once("num_threads", f"torch.set_num_threads({n}) -> {wanted} (tuned config)")
        return original(wanted)

    set_num_threads._tracetune_wrapped = True
    torch.set_num_threads = set_num_threads
    original(settings["torch.num_threads"])


# ---------------------------------------------------------------- DataLoader

def _patch_dataloader(module):
    cls = module.DataLoader
    original = cls.__init__
    if getattr(original, "_tracetune_wrapped", False):
        return
    sig = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError:
            return original(self, *args, **kwargs)  # let DataLoader report the job's own mistake
        _override_dataloader(bound.arguments, sig)
        return original(*bound.args, **bound.kwargs)

    __init__._tracetune_wrapped = True
    cls.__init__ = __init__


def _override_dataloader(args, sig):
    def current(name):
        return args[name] if name in args else sig.parameters[name].default

    for knob, name in (("dataloader.num_workers", "num_workers"), ("dataloader.pin_memory", "pin_memory")):
        if knob in settings and name in sig.parameters:
            if current(name) != settings[knob]:
                _once(knob, f"DataLoader {name} {current(name)!r} -> {settings[knob]!r} (tuned config)")
            args[name] = settings[knob]
    workers = current("num_workers")
    for knob, name in (("dataloader.prefetch_factor", "prefetch_factor"),
                       ("dataloader.persistent_workers", "persistent_workers")):
        if name not in sig.parameters:
            continue
        if workers == 0:
            # both are errors without workers; drop them (also when the config removed the workers)
            args.pop(name, None)
            if knob in settings:
                _once(knob, f"{knob}: ignored, this DataLoader has no workers")
            continue
        if knob in settings:
            if current(name) != settings[knob]:
                _once(knob, f"DataLoader {name} {current(name)!r} -> {settings[knob]!r} (tuned config)")
            args[name] = settings[knob]


# ---------------------------------------------------------------- DistributedDataParallel

def _patch_ddp(module):
    cls = module.DistributedDataParallel
    original = cls.__init__
    if getattr(original, "_tracetune_wrapped", False):
        return
    sig = inspect.signature(original)
    original_register = cls.register_comm_hook

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError:
            return original(self, *args, **kwargs)
        a = bound.arguments
        static_after = False
        for knob, name in (("ddp.bucket_cap_mb", "bucket_cap_mb"),
                           ("ddp.gradient_as_bucket_view", "gradient_as_bucket_view"),
                           ("ddp.static_graph", "static_graph")):
            if knob not in settings:
                continue
            if name not in sig.parameters:
                if name == "static_graph" and settings[knob] and hasattr(cls, "_set_static_graph"):
                    static_after = True
                else:
                    _once(knob, f"{knob}: this PyTorch's DistributedDataParallel has no {name}; not applied")
                continue
            old = a.get(name, sig.parameters[name].default)
            if old != settings[knob]:
                _once(knob, f"DistributedDataParallel {name} {old!r} -> {settings[knob]!r} (tuned config)")
            a[name] = settings[knob]
        if "module" in a:
            a["module"] = _wrap_model(a["module"])
        original(*bound.args, **bound.kwargs)
        if static_after:
            self._set_static_graph()
        hook = settings.get("ddp.comm_hook", "none")
        if hook != "none":
            _register_comm_hook(self, hook, original_register)

    @functools.wraps(original_register)
    def register_comm_hook(self, state, hook):
        if getattr(self, "_tracetune_comm_hook", None):
            _once("comm-hook-user", f"register_comm_hook({getattr(hook, '__name__', hook)}) skipped: the tuned config "
                                    f"installed the {self._tracetune_comm_hook} hook")
            return None
        return original_register(self, state, hook)

    __init__._tracetune_wrapped = True
    cls.__init__ = __init__
    cls.register_comm_hook = register_comm_hook


def _register_comm_hook(ddp, name, register):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if name == "powersgd":
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1)
        register(ddp, state, powerSGD_hook.powerSGD_hook)
    elif name == "hierarchical":
        from tracetune import _hierarchical
        _hierarchical.register(ddp, register, lambda msg: _once("comm-hook-hier", msg))
    else:
        fn = getattr(default_hooks, f"{name}_compress_hook", None)
        if fn is None:
            _once("comm-hook", f"ddp.comm_hook = {name}: not available in this PyTorch; not applied")
            return
        register(ddp, None, fn)
    ddp._tracetune_comm_hook = name
    _once("comm-hook-on", f"DistributedDataParallel communication hook: {name} (tuned config)")


def _model_settings():
    """Settings applied to the job's model, or checked against the device it runs on."""
    return (settings.get("amp.dtype") == "bf16" or settings.get("compile.mode", "none") != "none"
            or settings.get("memory.channels_last") is True or settings.get("sdpa.backend") in ("efficient", "cudnn")
            or settings.get("torch.matmul_precision", "highest") != "highest")


def _device_notes(torch, model, who, args=()):
    """What a process-wide setting cannot do on the device of the job's model (of its first
    parameter, else of its first tensor input): said once; sdpa.backend efficient / cudnn (no
    CPU kernel) go back to PyTorch's default on a CPU model."""
    first = next(model.parameters(), None)
    if first is None:
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    if first is None or first.device.type != "cpu":
        return
    sdpa = settings.get("sdpa.backend")
    if sdpa in ("efficient", "cudnn") and hasattr(torch.nn.functional, "scaled_dot_product_attention") and \
            hasattr(torch.backends.cuda, _SDPA_SWITCHES[sdpa]):
        _set_sdpa(torch, "default")
        _once("sdpa-cpu", f"sdpa.backend = {sdpa}: {who} is on the CPU, where PyTorch has no {sdpa} kernel; "
                          "not applied (PyTorch's default kept)")
    precision = settings.get("torch.matmul_precision", "highest")
    if precision != "highest" and hasattr(torch, "set_float32_matmul_precision") and \
            not hasattr(getattr(torch.backends, "mkldnn", None), "matmul"):
        _once("matmul-precision-cpu", f"torch.matmul_precision = {precision}: {who} is on the CPU; this PyTorch "
                                      f"({torch.__version__}) documents the setting for CUDA matmuls only (oneDNN CPU "
                                      "matmuls follow it from PyTorch 2.9), so its matmuls may stay float32")


def _channels_last(torch, model, who):
    """memory.channels_last: the model's 4-D weights and, through a forward pre-hook on this
    module only, its 4-D positional inputs in channels-last layout. Returns the hook (None when
    not applied: a model without 4-D weights)."""
    if not any(p.dim() == 4 for p in model.parameters()):
        _once("channels-last", f"memory.channels_last: {who} has no 4-D (convolution) weights; not applied")
        return None
    model.to(memory_format=torch.channels_last)

    def inputs_channels_last(module, args):
        return tuple(a.to(memory_format=torch.channels_last) if isinstance(a, torch.Tensor) and a.dim() == 4 else a
                     for a in args)

    model.register_forward_pre_hook(inputs_channels_last)
    _once("channels-last-on", f"memory.channels_last: {who}'s weights and 4-D inputs are channels-last")
    return inputs_channels_last


def _autocast_forward(torch, model, who):
    param = next(model.parameters(), None)
    device = param.device.type if param is not None else "cpu"
    forward = model.forward

    @functools.wraps(forward)
    def autocast_forward(*args, **kwargs):
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            return forward(*args, **kwargs)

    model.forward = autocast_forward
    _once("amp", f"amp.dtype = bf16: {who}'s forward runs under torch.autocast({device!r}, bfloat16)")


def _wrap_model(model):
    """amp.dtype = bf16 and compile.mode, for the model DDP wraps."""
    import torch
    _device_notes(torch, model, "the DDP model")
    if settings.get("memory.channels_last") is True:
        _channels_last(torch, model, "the DDP model")
    if settings.get("amp.dtype") == "bf16":
        _autocast_forward(torch, model, "the DDP model")
    mode = settings.get("compile.mode", "none")
    if mode != "none" and hasattr(torch, "compile"):
        model = torch.compile(model, mode=mode)
        _once("compile-on", f"compile.mode = {mode}: the DDP model is torch.compile'd")
    return model


def _patch_first_model(torch):
    """amp.dtype = bf16, compile.mode and memory.channels_last for a job without DDP (and the
    device checks of _device_notes): the model is the first module the main thread of this
    process calls (its outermost: a forward pre-hook sees the outer module before its children).
    A one-shot global pre-hook finds it and removes itself at once; amp and compile take effect
    from the model's second call (module.compile compiles in place, so the job's own reference
    to the model is what runs compiled), channels_last from its first (the hook returns the
    converted inputs). A model DDP wraps is left to the DDP path; one the job compiled itself
    is not compiled again."""
    register = getattr(getattr(torch.nn.modules, "module", None), "register_module_forward_pre_hook", None)
    if register is None:
        return
    installer = (os.getpid(), threading.get_ident())
    handle = []

    def first_call(module, args):
        if (os.getpid(), threading.get_ident()) != installer:
            return None  # a DataLoader worker (forked) or another thread: not the training loop
        handle.pop().remove()
        try:
            to_channels_last = _apply_to_first_model(torch, module, args)
        except Exception as e:  # noqa: BLE001  (never break the job)
            _once("model-settings", f"amp.dtype/compile.mode/memory.channels_last: not applied ({type(e).__name__}: {e})")
            return None
        return to_channels_last(module, args) if to_channels_last else None

    handle.append(register(first_call))


def _apply_to_first_model(torch, model, args=()):
    """The model settings for the first module the job calls (`args`: its first call's);
    returns the channels-last input conversion for this first call (None when it does not
    apply)."""
    name = type(model).__name__
    if getattr(model, "_tracetune_model", False) or "DistributedDataParallel" in name:
        return None  # the DDP path applied them (or will)
    model._tracetune_model = True
    who = f"the job's model ({name}, the first module it calls)"
    _device_notes(torch, model, who, args)
    to_channels_last = _channels_last(torch, model, who) if settings.get("memory.channels_last") is True else None
    if settings.get("amp.dtype") == "bf16":
        _autocast_forward(torch, model, who)
    mode = settings.get("compile.mode", "none")
    if mode == "none" or not hasattr(torch, "compile"):
        return to_channels_last
    if name == "OptimizedModule":
        _once("compile-own", f"compile.mode = {mode}: the job compiles its model itself; left as it is")
    elif not hasattr(model, "compile"):
        _once("compile", f"compile.mode = {mode}: this PyTorch ({torch.__version__}) cannot compile a module in place "
                         "(nn.Module.compile, 2.2+): only DDP models are compiled")
    else:
        model.compile(mode=mode)
        _once("compile-on", f"compile.mode = {mode}: {who} is compiled in place (its next calls run compiled)")
    return to_channels_last


# ---------------------------------------------------------------- optimizers

def _patch_optimizers(optim):
    if "optimizer.foreach" not in settings and "optimizer.fused" not in settings:
        return
    base = getattr(optim, "Optimizer", None)
    for name in dir(optim):
        cls = getattr(optim, name)
        if isinstance(cls, type) and base is not None and issubclass(cls, base) and cls is not base:
            _patch_optimizer_class(cls)


def _fused_unsupported(params):
    """'' when PyTorch has fused optimizer kernels for every parameter's device, else why not:
    CUDA only before 2.x; 2.x asks torch (CPU, CUDA, MPS, XPU, ...)."""
    tensors = []
    for p in params:
        tensors.extend(p["params"] if isinstance(p, dict) else [p])
    if not tensors:
        return "the optimizer has no parameters"
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices as supported_devices
        devices = set(supported_devices())
    except ImportError:  # PyTorch 1.x: CUDA only
        devices = {"cuda"}
    missing = sorted({t.device.type for t in tensors if getattr(t, "device", None) is not None} - devices)
    return f"parameters on {', '.join(missing)} (fused kernels here: {', '.join(sorted(devices))})" if missing else ""


_init_depth = threading.local()  # optimizer __init__s running in this thread (AdamW's calls Adam's)


def _patch_optimizer_class(cls):
    original = cls.__dict__.get("__init__")
    if original is None or getattr(original, "_tracetune_wrapped", False):
        return
    sig = inspect.signature(original)
    has_foreach, has_fused = "foreach" in sig.parameters, "fused" in sig.parameters
    if not (has_foreach or has_fused):
        return

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        depth = getattr(_init_depth, "n", 0)
        if depth:  # a base class's __init__ under a subclass's: the outermost one applied the settings
            return original(self, *args, **kwargs)
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError:
            return original(self, *args, **kwargs)
        _override_optimizer_arguments(cls, bound.arguments, sig, has_foreach, has_fused)
        _init_depth.n = depth + 1
        try:
            return original(*bound.args, **bound.kwargs)
        finally:
            _init_depth.n = depth

    __init__._tracetune_wrapped = True
    cls.__init__ = __init__


def _override_optimizer_arguments(cls, a, sig, has_foreach, has_fused):
    """optimizer.fused / optimizer.foreach over the arguments the job's code passed."""
    if settings.get("optimizer.fused") and not has_fused:
        _once(f"fused:{cls.__name__}", f"optimizer.fused: {cls.__name__} has no fused implementation in this PyTorch; not applied")
    if settings.get("optimizer.fused") is not None and has_fused:
        params = [dict(g, params=list(g["params"])) if isinstance(g, dict) else g for g in a.get("params", ())]
        a["params"] = params
        want = settings["optimizer.fused"]
        why = _fused_unsupported(params) if want else ""
        if why:
            _once(f"fused:{cls.__name__}", f"optimizer.fused: {cls.__name__} {why}; not applied")
        else:
            a["fused"] = want
            if want and has_foreach:
                a["foreach"] = None  # fused and foreach exclude each other
            _once(f"fused-on:{cls.__name__}", f"{cls.__name__} fused={want!r} (tuned config)")
    if "optimizer.foreach" in settings and has_foreach and not a.get("fused"):
        if a.get("foreach", sig.parameters["foreach"].default) != settings["optimizer.foreach"]:
            _once(f"foreach:{cls.__name__}", f"{cls.__name__} foreach={settings['optimizer.foreach']!r} (tuned config)")
        a["foreach"] = settings["optimizer.foreach"]
