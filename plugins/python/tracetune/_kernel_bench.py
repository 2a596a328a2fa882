"""`tracetune bench kernels`: each substitution of the catalogue (tuner/knobs/substitutions.toml)
measured against the stock PyTorch op at given shapes, forward and backward (or one optimizer
step), after warm-up, stock and candidate interleaved, medians; and the parity check: the
largest absolute and relative error of outputs and gradients (for optimizers: parameters
after several steps) against the tolerances of the entry's numerics class. A candidate is
kept only when its parity passes and it is faster than stock beyond the measured noise.

    python3 -m tracetune._kernel_bench --catalogue substitutions.toml --knobs knobs.toml [--json]

The CLI verb passes the catalogues compiled into tracetune. evaluate() is the API the tests
use to show that a wrong implementation is refused.
"""
import argparse
import json
import os
import statistics
import sys
import time

DEFAULT_SHAPES = {"layernorm": "2048x256", "cross_entropy": "512x32000", "optimizer": "24x65536"}
SUB_FIELDS = {"id", "replaces", "knob", "kernel_patterns", "op_patterns", "min_share", "numerics", "impl"}
IMPL_FIELDS = {"name", "devices", "dtypes", "requires", "doc"}
CLASS_FIELDS = {"doc", "rtol", "atol", "grad_rtol", "grad_atol", "loss_rtol", "changes_numerics"}


# ---------------------------------------------------------------- the catalogue

def _toml(path):
    import tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


def load_catalogue(path, knobs_path):
    """The checked catalogue, or ValueError naming the file and the entry."""
    doc, knobs = _toml(path), {k["id"]: k for k in _toml(knobs_path).get("knob", [])}
    if doc.get("schema") != 1:
        raise ValueError(f"{path}: schema must be 1")
    classes = doc.get("numerics", {})
    for name, c in classes.items():
        if set(c) != CLASS_FIELDS:
            raise ValueError(f"{path}: numerics.{name}: fields must be {sorted(CLASS_FIELDS)}")
    seen = set()
    for i, s in enumerate(doc.get("substitution", []), 1):
        where = f"{path}: substitution {i} ({s.get('id', '?')})"
        if set(s) != SUB_FIELDS:
            raise ValueError(f"{where}: fields must be {sorted(SUB_FIELDS)}, got {sorted(s)}")
        if s["id"] in seen:
            raise ValueError(f"{where}: id listed twice")
        seen.add(s["id"])
        if s["knob"] not in knobs or not s["knob"].startswith("kernels."):
            raise ValueError(f"{where}: knob {s['knob']} is not a kernels.* knob of the knob catalogue")
        if s["numerics"] not in classes:
            raise ValueError(f"{where}: numerics class {s['numerics']} is not defined")
        if not (0 < s["min_share"] < 1) or not s["kernel_patterns"] or not s["op_patterns"]:
            raise ValueError(f"{where}: min_share must be in (0, 1) and the patterns non-empty")
        for impl in s["impl"]:
            if not set(impl) <= IMPL_FIELDS or not {"name", "devices", "dtypes", "requires"} <= set(impl):
                raise ValueError(f"{where}: impl {impl.get('name')}: fields must be {sorted(IMPL_FIELDS)}")
            knob, _, value = impl["name"].rpartition("=")
            knob = knob or s["knob"]
            if knob not in knobs:
                raise ValueError(f"{where}: impl {impl['name']}: {knob} is not in the knob catalogue")
            allowed = knobs[knob].get("choices") or knobs[knob].get("values", [])
            if value not in [str(v).lower() for v in allowed]:
                raise ValueError(f"{where}: impl {impl['name']}: {value} is not a value of {knob}")
    return {"numerics": classes, "substitutions": doc.get("substitution", [])}


def impl_setting(sub, impl):
    """(knob id, value) that selects this implementation in tuned.toml."""
    knob, _, value = impl["name"].rpartition("=")
    if not knob:
        return sub["knob"], value
    return knob, {"true": True, "false": False}.get(value, value)


# ---------------------------------------------------------------- cases: stock vs candidate

def _shape(text):
    try:
        a, b = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"shape {text!r}: expected ROWSxCOLS (e.g. 2048x768)") from None
    if a <= 0 or b <= 0:
        raise ValueError(f"shape {text!r}: sizes must be positive")
    return a, b


def _layernorm_case(impl, shape, device):
    import torch
    import torch.nn.functional as F
    from tracetune import _kernels
    rows, cols = shape
    g = torch.Generator().manual_seed(0)
    x0, dy = torch.randn(rows, cols, generator=g) * 2 + 1, torch.randn(rows, cols, generator=g)
    w0, b0 = torch.randn(cols, generator=g), torch.randn(cols, generator=g)
    x0, dy, w0, b0 = (t.to(device) for t in (x0, dy, w0, b0))
    if callable(impl):
        fn = impl
    elif impl == "stock":
        fn = lambda x, w, b: F.layer_norm(x, (cols,), w, b, 1e-5)  # noqa: E731
    elif impl == "tracetune":
        fn = lambda x, w, b: _kernels.layer_norm(x, (cols,), w, b, 1e-5)  # noqa: E731
    else:  # a library's (liger, apex), detected in the environment
        from tracetune import _libraries
        library_fn = _libraries.layer_norm(impl)
        fn = lambda x, w, b: library_fn(x, (cols,), w, b, 1e-5)  # noqa: E731
    x, w, b = (t.clone().requires_grad_() for t in (x0, w0, b0))

    def run():
        x.grad = w.grad = b.grad = None
        y = fn(x, w, b)
        y.backward(dy)
        return [y.detach(), x.grad, w.grad, b.grad]
    return run


def _cross_entropy_case(impl, shape, device):
    import torch
    import torch.nn.functional as F
    from tracetune import _kernels
    rows, cols = shape
    g = torch.Generator().manual_seed(0)
    logits0 = (torch.randn(rows, cols, generator=g) * 3).to(device)
    target = torch.randint(0, cols, (rows,), generator=g).to(device)
    if callable(impl):
        fn = impl
    elif impl == "stock":
        fn = lambda l, t: F.cross_entropy(l, t)  # noqa: E731,E741
    elif impl == "tracetune":
        fn = lambda l, t: _kernels.cross_entropy(l, t)  # noqa: E731,E741
    else:  # a library's (liger), detected in the environment
        from tracetune import _libraries
        library_fn = _libraries.cross_entropy(impl)
        fn = lambda l, t: library_fn(l, t, -100, "mean")  # noqa: E731,E741
    logits = logits0.clone().requires_grad_()

    def run():
        logits.grad = None
        loss = fn(logits, target)
        loss.backward()
        return [loss.detach().reshape(1), logits.grad]
    return run


def _optimizer_case(impl, shape, device, steps=8, config=None):
    """The job's optimizer (`config`: its recorded description, tracetune.optimizer in the
    trace) or else AdamW(lr=1e-3, weight_decay=0.01), over `count` tensors of `numel` elements;
    run() = one step; outputs = parameters after `steps` steps from fixed gradients (compared
    with stock's, the same configuration stepped by PyTorch)."""
    import torch
    from tracetune import _fused_optim
    count, numel = shape
    g = torch.Generator().manual_seed(0)
    init = [torch.randn(numel, generator=g).to(device) for _ in range(count)]
    grads = [torch.randn(numel, generator=g).to(device) * 0.1 for _ in range(count)]
    params = [p.clone().requires_grad_() for p in init]
    for p, gr in zip(params, grads):
        p.grad = gr.clone()
    if config is not None:
        opt = _fused_optim.from_description(config, params)
        overrides = {"optimizer.foreach=true": {"foreach": True}, "optimizer.fused=true": {"fused": True, "foreach": None}}
        for group in opt.param_groups:
            group.update(overrides.get(impl, {}))
    else:
        kwargs = dict(lr=1e-3, weight_decay=0.01)
        if impl == "optimizer.foreach=true":
            opt = torch.optim.AdamW(params, foreach=True, **kwargs)
        elif impl == "optimizer.fused=true":
            opt = torch.optim.AdamW(params, fused=True, **kwargs)
        else:
            opt = torch.optim.AdamW(params, **({"foreach": False} if impl == "stock" else {}), **kwargs)
    if impl == "tracetune":
        why = _fused_optim.unsupported(opt)
        if why:  # the numerics guard keeps PyTorch's step for this configuration: nothing to measure
            raise _Refused(f"the numerics guard keeps PyTorch's step ({why})")
        def step():
            _fused_optim.fused_step(opt, type(opt).step)
    elif callable(impl):
        def step():
            impl(opt)
    else:
        step = opt.step

    def run():
        step()
        return None

    def outputs():
        with torch.no_grad():
            for p, p0 in zip(params, init):
                p.copy_(p0)
        opt.state.clear()
        for _ in range(steps):
            step()
        return [p.detach().clone() for p in params]
    run.outputs = outputs
    return run


class _Refused(Exception):
    """A candidate that cannot serve the configuration it is asked to serve."""


CASES = {"layernorm": _layernorm_case, "cross_entropy": _cross_entropy_case, "optimizer": _optimizer_case}


# ---------------------------------------------------------------- measuring and judging

def _outputs(run):
    return run.outputs() if hasattr(run, "outputs") else run()


def parity(stock_out, cand_out, cls, grads_after_first=True):
    """Largest abs/rel errors of outputs (the first tensor) and gradients (the rest; with
    grads_after_first=False every tensor is an output), and whether every element is within
    the class's tolerances."""
    report = {"max_abs": 0.0, "max_rel": 0.0, "grad_max_abs": 0.0, "grad_max_rel": 0.0, "pass": True}
    for i, (s, c) in enumerate(zip(stock_out, cand_out)):
        if s is None and c is None:
            continue
        if s is None or c is None or s.shape != c.shape:
            report["pass"] = False
            continue
        s, c = s.double().cpu(), c.double().cpu()
        grad = grads_after_first and i > 0
        rtol, atol = (cls["grad_rtol"], cls["grad_atol"]) if grad else (cls["rtol"], cls["atol"])
        diff = (s - c).abs()
        key = "grad_max" if grad else "max"
        if diff.numel():
            report[f"{key}_abs"] = max(report[f"{key}_abs"], float(diff.max()))
            report[f"{key}_rel"] = max(report[f"{key}_rel"], float((diff / s.abs().clamp_min(atol)).max()))
            if not bool((diff <= atol + rtol * s.abs()).all()) or not bool(c.isfinite().all() == s.isfinite().all()):
                report["pass"] = False
    return report


def _time_pair(stock, cand, warmup, repeats):
    """Medians (ms) of stock and candidate, interleaved so that load on the machine hits both."""
    for _ in range(warmup):
        stock()
        cand()
    ts, tc = [], []
    for _ in range(repeats):
        for fn, out in ((stock, ts), (cand, tc)):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
    def spread(v):
        q = statistics.quantiles(v, n=4) if len(v) >= 4 else [min(v), 0, max(v)]
        return (q[2] - q[0]) / statistics.median(v)
    return statistics.median(ts), statistics.median(tc), max(spread(ts), spread(tc))


def evaluate(sub, impl, shape, device, cls, warmup=3, repeats=15, optimizer=None):
    """One candidate against stock: timings, parity and the verdict. `impl` is an impl name
    of the catalogue or, in tests, a callable standing in for the candidate op; `optimizer`
    the job's optimizer configuration (describe()) for the optimizer entry."""
    make = CASES[sub["id"]]
    extra = {"config": optimizer} if sub["id"] == "optimizer" and optimizer is not None else {}
    res = {"substitution": sub["id"], "impl": impl if isinstance(impl, str) else getattr(impl, "__name__", "custom"),
           "shape": "x".join(map(str, shape)), "device": str(device)}
    try:
        stock, cand = make("stock", shape, device, **extra), make(impl, shape, device, **extra)
        par = parity(_outputs(stock), _outputs(cand), cls, grads_after_first=not hasattr(stock, "outputs"))
    except (_Refused, ValueError, RuntimeError) as e:  # the job's configuration is one the candidate cannot run
        res["verdict"] = f"refused: {e}"
        return res
    res["parity"] = par
    if not par["pass"]:
        res["verdict"] = "refused: parity"
        return res
    s_ms, c_ms, noise = _time_pair(stock, cand, warmup, repeats)
    ratio = s_ms / c_ms
    res.update(stock_ms=round(s_ms, 4), candidate_ms=round(c_ms, 4), ratio=round(ratio, 3), noise=round(noise, 3))
    threshold = 1 + max(0.02, noise)
    res["verdict"] = "keep" if ratio > threshold else ("slower" if ratio < 1 else "within noise")
    return res


def unavailable(impl, device):
    """'' when `impl` can run here, else why not (libraries are detected, never installed)."""
    import torch
    if device not in impl["devices"]:
        return f"not for {device}"
    if device == "cuda" and not torch.cuda.is_available():
        return "no CUDA device"
    req = impl["requires"]
    if req == "kernel-pack":
        from tracetune import _kernels
        return "" if _kernels.library(device) is not None else _kernels.unavailable(device)
    if req.startswith("torch>="):
        want = tuple(int(x) for x in req[len("torch>="):].split("."))
        have = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2] if x.isdigit())
        return "" if have >= want else f"needs {req} (this is {torch.__version__})"
    import importlib.util
    return "" if importlib.util.find_spec(req) else f"{req} is not installed in this environment"


def run(catalogue, only=(), shapes=None, device="cpu", allow_numerics=False, warmup=3, repeats=15, optimizer=None):
    results = []
    for sub in catalogue["substitutions"]:
        if only and sub["id"] not in only:
            continue
        cls = catalogue["numerics"][sub["numerics"]]
        shape = _shape((shapes or {}).get(sub["id"], DEFAULT_SHAPES[sub["id"]]))
        for impl in sub["impl"]:
            why = unavailable(impl, device)
            if not why and cls["changes_numerics"] and not allow_numerics:
                why = "changes numerics (use --allow-numerics)"
            if why:
                results.append({"substitution": sub["id"], "impl": impl["name"], "verdict": f"skipped: {why}"})
                continue
            results.append(evaluate(sub, impl["name"], shape, device, cls, warmup, repeats, optimizer))
            knob, value = impl_setting(sub, impl)
            results[-1]["setting"] = {knob: value}
    return results


def text(results, header):
    lines = [header, f"{'substitution':<14} {'impl':<24} {'shape':<11} {'stock ms':>9} {'cand ms':>9} {'ratio':>6} "
                     f"{'noise':>6} {'max rel err':>11} {'grad rel err':>12}  verdict"]
    for r in results:
        if "parity" not in r:
            lines.append(f"{r['substitution']:<14} {r['impl']:<24} {'':<11} {'':>9} {'':>9} {'':>6} {'':>6} {'':>11} {'':>12}  {r['verdict']}")
            continue
        p = r["parity"]
        lines.append(f"{r['substitution']:<14} {r['impl']:<24} {r['shape']:<11} {r.get('stock_ms', float('nan')):>9.3f} "
                     f"{r.get('candidate_ms', float('nan')):>9.3f} {r.get('ratio', float('nan')):>6.2f} "
                     f"{r.get('noise', float('nan')):>6.2f} {max(p['max_rel'], 0):>11.2e} {p['grad_max_rel']:>12.2e}  {r['verdict']}")
    lines.append("ratio = stock median / candidate median (>1: the candidate is faster); kept when parity passes and "
                 "ratio > 1 + max(2%, noise)")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tracetune bench kernels")
    ap.add_argument("--catalogue", required=True)
    ap.add_argument("--knobs", required=True)
    ap.add_argument("--only", default="", help="comma-separated substitution ids")
    ap.add_argument("--shapes", default="", help="id=ROWSxCOLS,... (optimizer: TENSORSxELEMENTS)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: PyTorch's default)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--allow-numerics", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--optimizer-config", default="",
                    help="the job's optimizer as JSON (the trace's tracetune.optimizer mark): the optimizer entry is "
                         "benchmarked and parity-checked on it instead of AdamW(lr=1e-3, weight_decay=0.01)")
    ap.add_argument("--kept", help="also write the kept candidates here, one knob=value per line (for `tune --kernels`)")
    a = ap.parse_args(argv)
    try:
        catalogue = load_catalogue(a.catalogue, a.knobs)
        shapes = dict(kv.split("=", 1) for kv in a.shapes.split(",") if kv) if a.shapes else {}
        for k, v in shapes.items():
            if k not in CASES:
                raise ValueError(f"--shapes: {k} is not a substitution ({', '.join(CASES)})")
            _shape(v)
        only = [x for x in a.only.split(",") if x]
        unknown = [x for x in only if x not in CASES]
        if unknown:
            raise ValueError(f"--only: {', '.join(unknown)} is not a substitution ({', '.join(CASES)})")
        if a.repeats < 3 or a.warmup < 0:
            raise ValueError("--repeats must be at least 3 and --warmup not negative")
        optimizer = json.loads(a.optimizer_config) if a.optimizer_config else None
        if optimizer is not None and not (isinstance(optimizer, dict) and isinstance(optimizer.get("groups"), list)
                                          and optimizer["groups"]):
            raise ValueError("--optimizer-config: expected {\"class\": ..., \"groups\": [{option: value, ...}, ...]}")
    except (ValueError, OSError) as e:
        sys.stderr.write(f"tracetune: bench kernels: {e}\n")
        return 2
    import torch
    if a.threads:
        torch.set_num_threads(a.threads)
    results = run(catalogue, only, shapes, a.device, a.allow_numerics, a.warmup, a.repeats, optimizer)
    if a.kept:
        with open(a.kept, "w") as f:
            for r in results:
                if r["verdict"] == "keep":
                    for knob, value in r["setting"].items():
                        f.write(f"{knob}={json.dumps(value)}\n")
    from tracetune import _libraries
    info = {"torch": torch.__version__, "threads": torch.get_num_threads(), "device": a.device,
            "libraries": {_libraries.LIBRARIES[k][0]: v for k, v in _libraries.detect().items()}}
    out = sys.stderr if a.kept else sys.stdout  # under `tune`, stdout is the tuner's result
    if a.json:
        out.write(json.dumps({**info, "results": results}, indent=2) + "\n")
    else:
        out.write(text(results, f"tracetune bench kernels: torch {info['torch']}, {info['threads']} thread(s), "
                                       f"{a.device}, {a.repeats} repeats after {a.warmup} warm-up (medians)\n"
                                       + (f"optimizer entry on the job's {optimizer['class']} ({len(optimizer['groups'])} "
                                          "param group(s), as recorded)\n" if optimizer else "")
                                       + _libraries.describe()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
