"""The shapes of the ops the substitution catalogue can replace, as counters in the trace
(docs/tuning.md, "Shapes from the trace").

During the job's first SAMPLED_STEPS steps, the autograd graph of each backward pass the job
starts is walked once, before it runs, and its LayerNorm and cross-entropy nodes are counted by
shape; at each step's end the counts go into the trace as counters named after the PyTorch
profiler's ops, whose "Input Dims" give the same counters when a Kineto trace is imported:

- "shape.aten::layer_norm.<rows>x<cols>" (NativeLayerNormBackward0: cols is the normalised
  size, rows the rest),
- "shape.aten::cross_entropy_loss.<rows>x<classes>" (NllLossBackward0 over LogSoftmaxBackward0,
  what F.cross_entropy records).

`tracetune tune --kernels` benchmarks each substitution at its most frequent shape.

The same walk counts what the graph holds, for the knobs that act on one op family only
(knobs.toml's `acts_on`): "graph.nodes" (every node walked), "graph.ops.convolution"
(ConvolutionBackward0 and its backend variants), "graph.ops.attention" (scaled-dot-product
attention's backward nodes, or a softmax's: attention computed by hand or by the math kernel)
and "graph.ops.compiled" (CompiledFunctionBackward: a compiled region, whose ops are hidden).
`tracetune tune` does not try memory.channels_last on a model whose graphs hold no
convolution, nor sdpa.backend on one without attention.

Why the graph and not hooks: recording must never change the job. A global module hook makes
torch.compile warn and fire hooks twice, and Dynamo guards on any state a hook reads in a
compiled region (the sampling countdown made a compiled model recompile at every sampled step);
replacing LayerNorm.forward or F.cross_entropy breaks torch.jit.script. The graph is read from
the backward wrapper of the step markers (_autostep), outside any compiled region, and nothing
is installed in torch. What runs inside a compiled region is one CompiledFunctionBackward node:
its ops are not counted, and no substitution could reach them either. Calls made without
gradients (inference) are not seen.
"""
from tracetune import _collector

SAMPLED_STEPS = 3

_counts = {}                        # counter name -> nodes in the step so far
_state = {"steps_left": 0}


def is_compiling():
    """torch.compiler.is_compiling once torch is imported (Dynamo folds it to True while it
    traces, so a caller that tests it first has no guard on our state)."""
    return False


def install(torch):
    """Start the sampling window (called when torch is imported in a recorded process)."""
    global is_compiling
    compiler = getattr(torch, "compiler", None)
    is_compiling = getattr(compiler, "is_compiling", None) or getattr(getattr(torch, "_dynamo", None), "is_compiling",
                                                                      None) or is_compiling
    if _collector.available():
        _state["steps_left"] = SAMPLED_STEPS


def sampling():
    return _state["steps_left"] > 0


def _output_shape(node, saved):
    """The shape of what the node's forward op returned: from the node's metadata (PyTorch 2.x),
    which unpacks nothing, else from the saved tensor `saved` names (1.x; unpacking it runs any
    saved-tensor hooks, e.g. non-reentrant checkpointing's, early, during the sampled steps)."""
    meta = getattr(node, "_input_metadata", None)
    if meta:
        return tuple(int(d) for d in meta[0].shape)
    return tuple(int(d) for d in getattr(node, saved).shape)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _layer_norm_shape(node):
    cols = _numel(int(n) for n in node._saved_normalized_shape)
    rows = _numel(_output_shape(node, "_saved_input")) // cols if cols > 0 else 0
    return f"shape.aten::layer_norm.{rows}x{cols}" if rows > 0 else None


def _cross_entropy_shape(node):
    inputs = [f for f, _ in node.next_functions if f is not None]
    if not inputs or type(inputs[0]).__name__ != "LogSoftmaxBackward0":
        return None  # nll_loss of something else: not what F.cross_entropy records
    logits = _output_shape(inputs[0], "_saved_result")  # log_softmax's output: the logits' shape
    if len(logits) == 1:
        return f"shape.aten::cross_entropy_loss.1x{logits[0]}"
    classes = logits[1] if len(logits) > 1 else 0
    return f"shape.aten::cross_entropy_loss.{_numel(logits) // classes}x{classes}" if classes > 0 else None


_SHAPES = {"NativeLayerNormBackward0": _layer_norm_shape, "NllLossBackward0": _cross_entropy_shape}


def _op_family(kind):
    """The "graph.ops.*" counter a node of type name `kind` adds to (None: none)."""
    if "Convolution" in kind:
        return "graph.ops.convolution"
    if "ScaledDotProduct" in kind or kind in ("SoftmaxBackward0", "SafeSoftmaxBackward0"):
        return "graph.ops.attention"
    if kind.startswith("CompiledFunction"):
        return "graph.ops.compiled"
    return None


def _count(name):
    _counts[name] = _counts.get(name, 0) + 1


def count_graph(tensors):
    """Count the nodes of the graph behind `tensors` (what torch.autograd.backward is about to
    run): all of them, their op families, and the LayerNorm and cross-entropy shapes. Never
    raises."""
    if not sampling():
        return
    try:
        roots = tensors if isinstance(tensors, (list, tuple)) else [tensors]
        pending = [getattr(t, "grad_fn", None) for t in roots]
        seen = set()
        while pending:
            node = pending.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            kind = type(node).__name__
            _count("graph.nodes")
            family = _op_family(kind)
            if family:
                _count(family)
            shape_of = _SHAPES.get(kind)
            name = shape_of(node) if shape_of is not None else None
            if name:
                _count(name)
            pending.extend(f for f, _ in node.next_functions)
    except Exception:  # noqa: BLE001  (a graph we cannot read: record no shapes, never break the job)
        return


def on_step_end(now_ns):
    """Write the step's counts, stamped with its end; stop after SAMPLED_STEPS steps."""
    if not sampling():
        return
    for name, calls in _counts.items():
        _collector.counter_at(name, calls, now_ns)
    _counts.clear()
    _state["steps_left"] -= 1
