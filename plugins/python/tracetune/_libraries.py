"""Well-kept kernel libraries the job's environment may already have: Liger Kernel, NVIDIA apex
and Transformer Engine. Detected here (import probing in the job's Python), never installed by
tracetune. Where a library is present, the kernels.* knobs may select its implementation of an
op (kernels.layernorm = "liger" or "apex", kernels.cross_entropy = "liger"); the swap goes
through the same swap()/restore() and once-per-reason fallback as the kernel pack's
(_kernels.py). Transformer Engine is detected and reported only: its LayerNorm is a module with
its own parameters, not a function over the job's.
"""
import importlib
import importlib.util

# impl name -> (module to import, devices its kernels run on, dtypes)
LIBRARIES = {
    "liger": ("liger_kernel", ("cuda",), ("float32", "float16", "bfloat16")),  # Triton kernels
    "apex": ("apex", ("cuda",), ("float32", "float16", "bfloat16")),           # CUDA extensions
    "te": ("transformer_engine", ("cuda",), ("float32", "float16", "bfloat16")),
}


def installed(impl):
    """The library's version (or "installed") when the job's environment has it, else None."""
    module = LIBRARIES[impl][0]
    try:
        if importlib.util.find_spec(module) is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        from importlib import metadata
        return metadata.version(module.replace("_", "-"))
    except Exception:  # noqa: BLE001  (no distribution metadata: a source checkout)
        return "installed"


def detect():
    """{impl: version or None} for every library we know, for reports."""
    return {impl: installed(impl) for impl in LIBRARIES}


def describe():
    """One line for `bench kernels` and the tuner's logs."""
    parts = []
    for impl, version in detect().items():
        module = LIBRARIES[impl][0]
        parts.append(f"{module} {version}" if version else f"{module} not installed")
    return "kernel libraries: " + ", ".join(parts) + " (detected, never installed by tracetune)"


def unsupported(impl, tensor):
    """'' when `impl`'s kernels can take `tensor`, else why not."""
    _, devices, dtypes = LIBRARIES[impl]
    if tensor.device.type not in devices:
        return f"{LIBRARIES[impl][0]} runs on {'/'.join(devices)} tensors, not {tensor.device.type}"
    if str(tensor.dtype).replace("torch.", "") not in dtypes:
        return f"dtype {tensor.dtype}"
    return ""


def layer_norm(impl):
    """fn(x, normalized_shape, weight, bias, eps) of the library, or raise ImportError."""
    if impl == "liger":
        fn = importlib.import_module("liger_kernel.transformers.functional").liger_layer_norm

        def liger(x, normalized_shape, weight, bias, eps):
            if len(normalized_shape) != 1 or weight is None or bias is None:
                raise NotImplementedError("Liger's LayerNorm takes one normalized dimension with weight and bias")
            return fn(x, weight, bias, eps)
        return liger
    if impl == "apex":
        mod = importlib.import_module("apex.normalization.fused_layer_norm")

        def apex(x, normalized_shape, weight, bias, eps):
            if weight is None:
                return mod.fused_layer_norm(x, normalized_shape, eps)
            if bias is None:
                raise NotImplementedError("apex's fused LayerNorm needs a bias with its weight")
            return mod.fused_layer_norm_affine(x, weight, bias, normalized_shape, eps)
        return apex
    raise ImportError(f"no LayerNorm from {impl}")


def cross_entropy(impl):
    """fn(logits, target, ignore_index, reduction) of the library, or raise ImportError."""
    if impl != "liger":
        raise ImportError(f"no cross-entropy from {impl}")
    loss_class = importlib.import_module("liger_kernel.transformers").LigerCrossEntropyLoss
    modules = {}

    def liger(logits, target, ignore_index, reduction):
        key = (ignore_index, reduction)
        if key not in modules:
            modules[key] = loss_class(ignore_index=ignore_index, reduction=reduction)
        return modules[key](logits, target)
    return liger
