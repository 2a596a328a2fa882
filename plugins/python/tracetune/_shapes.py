"""The shapes of the ops the substitution catalogue can replace, as counters in the trace
(docs/tuning.md, "Shapes from the trace").

During the job's first SAMPLED_STEPS steps, each torch.nn.LayerNorm call and each
torch.nn.functional.cross_entropy call is counted by its shape; at each step's end the counts
go into the trace as counters named after the PyTorch profiler's ops, whose "Input Dims" give
the same counters when a Kineto trace is imported:

- "shape.aten::layer_norm.<rows>x<cols>" (cols: the normalised size, rows: the rest),
- "shape.aten::cross_entropy_loss.<rows>x<classes>".

`tracetune tune --kernels` benchmarks each substitution at its most frequent shape.

LayerNorm calls are seen through a global forward pre-hook, which TorchScript never compiles;
F.cross_entropy is wrapped for the sampled steps only and put back after them (unless something
else has replaced it since). After the window nothing is counted, so its cost ends with it.
"""
import functools

from tracetune import _collector

SAMPLED_STEPS = 3

_counts = {}                               # counter name -> calls in the step so far
_state = {"steps_left": 0, "undo": []}     # undo: callables that remove what install() added


def _count(name):
    if _state["steps_left"] > 0:
        _counts[name] = _counts.get(name, 0) + 1


def _layer_norm_shape(module, x):
    cols = 1
    for n in module.normalized_shape:
        cols *= int(n)
    if cols <= 0:
        return None
    return f"shape.aten::layer_norm.{x.numel() // cols}x{cols}"


def _cross_entropy_shape(logits):
    if logits.dim() == 1:
        return f"shape.aten::cross_entropy_loss.1x{logits.shape[0]}"
    classes = int(logits.shape[1])
    return f"shape.aten::cross_entropy_loss.{logits.numel() // max(classes, 1)}x{classes}" if classes > 0 else None


def install(torch):
    """Start counting (called when torch is imported in a recorded process)."""
    if not _collector.available() or _state["undo"]:
        return
    try:
        layer_norm = torch.nn.LayerNorm
        register = torch.nn.modules.module.register_module_forward_pre_hook
        functional = torch.nn.functional
    except AttributeError:  # an old or partial torch: record no shapes
        return
    _state["steps_left"] = SAMPLED_STEPS

    def pre_hook(module, args):
        if type(module) is layer_norm and args and _state["steps_left"] > 0:
            try:
                name = _layer_norm_shape(module, args[0])
            except Exception:  # noqa: BLE001  (never break the job)
                return None
            if name:
                _count(name)
        return None

    handle = register(pre_hook)
    _state["undo"].append(handle.remove)
    original = functional.cross_entropy

    @functools.wraps(original)
    def cross_entropy_counted(input, target, *args, **kwargs):
        if _state["steps_left"] > 0:
            try:
                name = _cross_entropy_shape(input)
            except Exception:  # noqa: BLE001
                name = None
            if name:
                _count(name)
        return original(input, target, *args, **kwargs)

    functional.cross_entropy = cross_entropy_counted

    def put_back():
        if functional.cross_entropy is cross_entropy_counted:
            functional.cross_entropy = original

    _state["undo"].append(put_back)


def on_step_end(now_ns):
    """Write the step's counts, stamped with its end; stop after SAMPLED_STEPS steps."""
    if _state["steps_left"] <= 0:
        return
    for name, calls in _counts.items():
        _collector.counter_at(name, calls, now_ns)
    _counts.clear()
    _state["steps_left"] -= 1
    if _state["steps_left"] == 0:
        for undo in _state["undo"]:
            undo()
