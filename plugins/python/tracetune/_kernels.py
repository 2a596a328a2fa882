"""tracetune's kernel pack inside the job: a ctypes loader for libtracetune_kernels(.so) and
libtracetune_kernels_cuda(.so), autograd functions over them, and the swaps the kernels.*
knobs ask for (docs/tuning.md, "Substitutions and the kernel pack").

The libraries are plain C over data pointers (plugins/kernels/include/tracetune_kernels.h):
nothing here depends on PyTorch's C++ ABI. Each swap replaces one attribute of torch
(torch.nn.LayerNorm.forward, torch.nn.functional.cross_entropy, the step method of
torch.optim.Adam/AdamW/SGD: _fused_optim.py), is logged once, and is undone by restore(). A call the kernels
cannot serve (dtype, device, shape, options) runs the original op, with one warning per
reason.
"""
import ctypes
import functools
import os
import threading

_lock = threading.Lock()
_swaps = []        # (owner, attribute name, original value), in the order applied
_libs = {}         # "cpu" / "cuda" -> ctypes.CDLL, or the reason it is unavailable (str)

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_F = ctypes.c_float
_INT = ctypes.c_int
_SIGNATURES = {
    "adam_step_f32": [_P, _P, _P, _P, _P, _INT, _F, _F, _F, _F, _F, _I64, _INT],
    "sgd_step_f32": [_P, _P, _P, _P, _INT, _F, _F, _F, _F, _INT, _INT],
    "layernorm_fwd_f32": [_P, _P, _P, _P, _P, _P, _I64, _I64, _F],
    "layernorm_bwd_f32": [_P, _P, _P, _P, _P, _P, _P, _P, _I64, _I64],
    "xent_fwd_f32": [_P, _P, _P, _P, _I64, _I64, _I64],
    "xent_bwd_f32": [_P, _P, _P, _P, _F, _P, _I64, _I64, _I64],
}
_LIB_NAMES = {"cpu": "libtracetune_kernels.so", "cuda": "libtracetune_kernels_cuda.so"}
_ENV = {"cpu": "TRACETUNE_KERNELS_LIB", "cuda": "TRACETUNE_KERNELS_CUDA_LIB"}


from tracetune._log import once, say as _say  # noqa: E402


def _candidates(kind):
    env = os.environ.get(_ENV[kind])
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    name = _LIB_NAMES[kind]
    # installed: <prefix>/share/tracetune/python/tracetune -> <prefix>/lib/tracetune
    return [os.path.join(here, "..", "..", "..", "..", "lib", "tracetune", name),
            os.path.join(here, "..", "..", "..", "build", "plugins", "kernels", name)]


def library(kind="cpu"):
    """The loaded library for "cpu" or "cuda", or None (the reason is in unavailable())."""
    with _lock:
        if kind in _libs:
            lib = _libs[kind]
            return None if isinstance(lib, str) else lib
    lib, why = None, f"{_LIB_NAMES[kind]} not found (set {_ENV[kind]})"
    for path in _candidates(kind):
        if not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(os.path.abspath(path))
        except OSError as e:
            why = f"{path}: {e}"
            continue
        prefix = "tt_k_" if kind == "cpu" else "tt_k_cuda_"
        for name, args in _SIGNATURES.items():
            fn = getattr(lib, prefix + name)
            fn.argtypes = args + ([_P] if kind == "cuda" else [])
            fn.restype = _INT
        if kind == "cpu":
            lib.tt_k_cpu_simd.restype = _INT
            lib.tt_k_set_force_scalar.argtypes = [_INT]
        break
    with _lock:
        _libs[kind] = lib if lib is not None else why
    return lib


def unavailable(kind="cpu"):
    library(kind)
    lib = _libs.get(kind)
    return lib if isinstance(lib, str) else None


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr()) if t is not None else None


def _call(device, name, *args):
    """Call tt_k_<name> (CPU) or tt_k_cuda_<name> on the current stream; raise on failure."""
    if device.type == "cuda":
        import torch
        lib = library("cuda")
        rc = getattr(lib, "tt_k_cuda_" + name)(*args, ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream))
    else:
        rc = getattr(library("cpu"), "tt_k_" + name)(*args)
    if rc != 0:
        raise RuntimeError(f"tracetune kernel {name} failed ({rc})")


def device_supported(device):
    """'' when the kernels run on `device`, else why not."""
    if device.type == "cpu":
        return "" if library("cpu") is not None else unavailable("cpu")
    if device.type == "cuda":
        return "" if library("cuda") is not None else unavailable("cuda")
    return f"no kernels for {device.type} tensors"


# ---------------------------------------------------------------- autograd functions

def _autograd():
    import torch

    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, cols, eps):
            x = x.contiguous()
            rows = x.numel() // cols
            y = torch.empty_like(x)
            mean = torch.empty(rows, dtype=torch.float32, device=x.device)
            rstd = torch.empty_like(mean)
            _call(x.device, "layernorm_fwd_f32", _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), _ptr(mean), _ptr(rstd),
                  rows, cols, eps)
            ctx.save_for_backward(x, weight, mean, rstd)
            ctx.cols, ctx.has_bias = cols, bias is not None
            return y

        @staticmethod
        def backward(ctx, dy):
            x, weight, mean, rstd = ctx.saved_tensors
            dy = dy.contiguous()
            dx = torch.empty_like(x)
            dw = torch.empty_like(weight) if weight is not None and ctx.needs_input_grad[1] else None
            db = torch.empty(ctx.cols, dtype=torch.float32, device=x.device) if ctx.has_bias and ctx.needs_input_grad[2] else None
            _call(x.device, "layernorm_bwd_f32", _ptr(dy), _ptr(x), _ptr(weight), _ptr(mean), _ptr(rstd), _ptr(dx),
                  _ptr(dw), _ptr(db), x.numel() // ctx.cols, ctx.cols)
            return dx, dw, (db.view(weight.shape) if db is not None and weight is not None else db), None, None

    class CrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, target, ignore_index, reduction):
            logits, target = logits.contiguous(), target.contiguous()
            rows, cols = logits.shape
            loss = torch.empty(rows, dtype=torch.float32, device=logits.device)
            lse = torch.empty_like(loss)
            _call(logits.device, "xent_fwd_f32", _ptr(logits), _ptr(target), _ptr(loss), _ptr(lse), rows, cols,
                  ignore_index)
            ctx.save_for_backward(logits, target, lse)
            ctx.ignore_index, ctx.reduction = ignore_index, reduction
            if reduction == "none":
                return loss
            if reduction == "sum":
                return loss.sum()
            ctx.valid = int((target != ignore_index).sum())
            return loss.sum() / ctx.valid  # nan when every row is ignored, as in PyTorch

        @staticmethod
        def backward(ctx, grad):
            logits, target, lse = ctx.saved_tensors
            rows, cols = logits.shape
            dlogits = torch.empty_like(logits)
            if ctx.reduction == "none":
                row_grad, scale = grad.contiguous(), 1.0
            else:
                row_grad = None
                scale = float(grad) / (ctx.valid if ctx.reduction == "mean" else 1)
            _call(logits.device, "xent_bwd_f32", _ptr(logits), _ptr(target), _ptr(lse), _ptr(row_grad), scale,
                  _ptr(dlogits), rows, cols, ctx.ignore_index)
            return dlogits, None, None, None

    return LayerNorm, CrossEntropy


_functions = None


def functions():
    """(LayerNorm, CrossEntropy) autograd functions, built on first use (torch imported then)."""
    global _functions
    if _functions is None:
        _functions = _autograd()
    return _functions


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """F.layer_norm through the kernel pack (check layer_norm_unsupported first)."""
    cols = 1
    for d in normalized_shape:
        cols *= int(d)
    return functions()[0].apply(x, weight, bias, cols, float(eps))


def layer_norm_unsupported(x, normalized_shape, weight, bias):
    import torch
    if x.dtype != torch.float32:
        return f"dtype {x.dtype}"
    for t in (weight, bias):
        if t is not None and (t.dtype != torch.float32 or t.device != x.device or not t.is_contiguous()):
            return "weight/bias not contiguous float32 on the input's device"
    if tuple(x.shape[x.dim() - len(normalized_shape):]) != tuple(normalized_shape) or x.numel() == 0:
        return f"shape {tuple(x.shape)}"
    return device_supported(x.device)


def cross_entropy(logits, target, ignore_index=-100, reduction="mean"):
    return functions()[1].apply(logits, target, int(ignore_index), reduction)


def cross_entropy_unsupported(logits, target, weight, reduction, label_smoothing):
    import torch
    if logits.dtype != torch.float32:
        return f"dtype {logits.dtype}"
    if logits.dim() != 2 or target.dim() != 1 or target.dtype != torch.int64 or logits.shape[0] != target.shape[0]:
        return "not (N, C) float logits with (N,) int64 class targets"
    if logits.numel() == 0:
        return "empty input"
    if weight is not None or label_smoothing:
        return "class weights or label smoothing"
    if reduction not in ("mean", "sum", "none"):
        return f"reduction {reduction!r}"
    if target.device != logits.device:
        return "targets on another device"
    return device_supported(logits.device)


# ---------------------------------------------------------------- swaps

def swap(owner, name, replacement, message):
    """Replace owner.name (remembering the original for restore()), logging once."""
    original = getattr(owner, name)
    if getattr(original, "_tracetune_swapped", False):
        return
    replacement._tracetune_swapped = True
    replacement._tracetune_original = original
    setattr(owner, name, replacement)
    with _lock:
        _swaps.append((owner, name, original))
    once(f"swap:{getattr(owner, '__name__', owner)}.{name}", message)


def restore():
    """Undo every swap, newest first. Returns how many were undone."""
    with _lock:
        undo = list(reversed(_swaps))
        _swaps.clear()
    for owner, name, original in undo:
        setattr(owner, name, original)
    return len(undo)


def swapped():
    """[(owner name, attribute)] of the swaps in effect."""
    with _lock:
        return [(getattr(o, "__name__", str(o)), n) for o, n, _ in _swaps]


def _library_function(knob, impl, getter):
    """The library's function for `impl` (_libraries.py), or None after one warning."""
    from tracetune import _libraries
    module = _libraries.LIBRARIES[impl][0]
    if _libraries.installed(impl) is None:
        once(f"lib-missing:{knob}:{impl}", f"{knob} = {impl}: {module} is not installed in this environment "
                                          "(tracetune never installs it); PyTorch's operator is kept")
        return None
    try:
        return getter(impl)
    except (ImportError, AttributeError) as e:
        once(f"lib-broken:{knob}:{impl}", f"{knob} = {impl}: {module} cannot be used ({e}); PyTorch's operator is kept")
        return None


def _layer_norm_impl(impl):
    """(fn(x, shape, weight, bias, eps), why-not(x, shape, weight, bias)) for `impl`, or None."""
    if impl == "tracetune":
        return layer_norm, layer_norm_unsupported
    from tracetune import _libraries
    fn = _library_function("kernels.layernorm", impl, _libraries.layer_norm)
    return None if fn is None else (fn, lambda x, shape, w, b: _libraries.unsupported(impl, x))


def install_layernorm(torch, impl="tracetune"):
    chosen = _layer_norm_impl(impl)
    if chosen is None:
        return
    fn, unsupported = chosen
    cls = torch.nn.LayerNorm
    original = cls.forward

    @functools.wraps(original)
    def forward(self, x):
        why = unsupported(x, self.normalized_shape, self.weight, self.bias)
        if not why:
            try:
                return fn(x, self.normalized_shape, self.weight, self.bias, self.eps)
            except NotImplementedError as e:  # a library's limit, found before it computed anything
                why = str(e)
        once(f"ln-fallback:{impl}:{why}", f"kernels.layernorm: {why}: this LayerNorm keeps PyTorch's kernel")
        return original(self, x)

    swap(cls, "forward", forward, f"kernels.layernorm: torch.nn.LayerNorm -> {_IMPL_NAMES.get(impl, impl)} LayerNorm "
                                  "(tuned config)")


# how the swap messages name each implementation
_IMPL_NAMES = {"tracetune": "tracetune fused", "liger": "Liger Kernel", "apex": "apex fused"}


def _cross_entropy_impl(impl):
    """(fn(logits, target, ignore_index, reduction), why-not(...)) for `impl`, or None."""
    if impl == "tracetune":
        return cross_entropy, cross_entropy_unsupported
    from tracetune import _libraries
    fn = _library_function("kernels.cross_entropy", impl, _libraries.cross_entropy)
    if fn is None:
        return None

    def unsupported(logits, target, weight, reduction, label_smoothing):
        if weight is not None or label_smoothing:
            return "class weights or label smoothing"
        if reduction not in ("mean", "sum", "none") or logits.dim() != 2:
            return "not (N, C) logits with reduction mean, sum or none"
        return _libraries.unsupported(impl, logits)
    return fn, unsupported


def install_cross_entropy(torch, impl="tracetune"):
    chosen = _cross_entropy_impl(impl)
    if chosen is None:
        return
    fn, unsupported = chosen
    F = torch.nn.functional
    original = F.cross_entropy

    @functools.wraps(original)
    def cross_entropy_swapped(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                              reduction="mean", label_smoothing=0.0):
        why = "legacy size_average/reduce arguments" if size_average is not None or reduce is not None else \
            unsupported(input, target, weight, reduction, label_smoothing)
        if why:
            once(f"xent-fallback:{impl}:{why}", f"kernels.cross_entropy: {why}: this call keeps PyTorch's cross_entropy")
            return original(input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing)
        return fn(input, target, ignore_index, reduction)

    name = "tracetune fused softmax + cross-entropy" if impl == "tracetune" else f"{_IMPL_NAMES.get(impl, impl)} cross-entropy"
    swap(F, "cross_entropy", cross_entropy_swapped, f"kernels.cross_entropy: torch.nn.functional.cross_entropy -> {name} "
                                                     "(tuned config)")
