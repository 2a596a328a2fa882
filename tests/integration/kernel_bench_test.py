#!/usr/bin/env python3
"""`tracetune bench kernels` and the substitution catalogue (Debian's CPU torch 1.13):

- cli: every catalogue entry is measured or skipped with a reason; the kernel pack's
  candidates pass their parity check; ratios and medians are reported (never judged here:
  timing on a shared machine is noise).
- wrong: deliberately wrong substitutions (a LayerNorm ignoring its bias, a cross-entropy
  gradient missing the one-hot term, an AdamW without bias correction) are refused by the
  parity check before any timing.
- catalogue: the built-in catalogue loads and names only kernels.* knobs of the knob
  catalogue; broken catalogues are refused with the file and entry named.
- usage: bad shapes or ids exit 2 with one line.

usage: kernel_bench_test.py TRACETUNE SOURCE_DIR CASE
"""
import json
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import TORCH_PYTHON as PY, run_under_torch_python  # noqa: E402

run_under_torch_python()  # the job's Python: Debian's (torch 1.13) or TT_TORCH_PYTHON's
TRACETUNE, SRC, CASE = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(SRC / "plugins/python"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, run_cases  # noqa: E402

CATALOGUE = SRC / "tuner/knobs/substitutions.toml"
KNOBS = SRC / "tuner/knobs/knobs.toml"
SMALL = "layernorm=64x96,cross_entropy=32x3001,optimizer=5x1000"


def bench(*args):
    return subprocess.run([TRACETUNE, "bench", "kernels", "--python", PY, *args], capture_output=True, text=True,
                          timeout=300)


def case_cli(tmp):
    r = bench("--json", "--repeats", "3", "--warmup", "1", "--shapes", SMALL)
    check("bench kernels exits 0", r.returncode == 0, r.stderr)
    doc = json.loads(r.stdout)
    results = {(x["substitution"], x["impl"]): x for x in doc["results"]}
    for sub in ("layernorm", "cross_entropy", "optimizer"):
        x = results.get((sub, "tracetune"))
        check(f"{sub}: the kernel pack was measured", x is not None and "ratio" in x, str(x))
        if x is None or "ratio" not in x:
            continue
        check(f"{sub}: parity passes", x["parity"]["pass"], str(x["parity"]))
        check(f"{sub}: medians and ratio reported", x["stock_ms"] > 0 and x["candidate_ms"] > 0 and x["ratio"] > 0, str(x))
        check(f"{sub}: verdict is one of keep/slower/within noise", x["verdict"] in ("keep", "slower", "within noise"))
        check(f"{sub}: names its tuned.toml setting", x["setting"] == {f"kernels.{sub}": "tracetune"}, str(x))
        print(f"{sub}: stock {x['stock_ms']} ms, tracetune {x['candidate_ms']} ms, ratio {x['ratio']}")
    fused = results.get(("optimizer", "optimizer.fused=true"), {})
    import torch
    version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if version >= (2, 4):  # PyTorch's fused Adam/AdamW runs on the CPU from 2.4
        check("PyTorch's fused optimizer measured on CPU with parity", fused.get("parity", {}).get("pass"), str(fused))
    else:
        check("PyTorch's fused optimizer skipped on CPU with a reason",
              fused.get("verdict", "").startswith("skipped: needs torch>=2.4"), str(fused))
    r = bench("--only", "layernorm", "--repeats", "3", "--warmup", "0", "--shapes", SMALL)
    check("text output has a header and the row", r.returncode == 0 and "layernorm" in r.stdout and "ratio" in r.stdout,
          r.stdout + r.stderr)


def case_wrong(tmp):
    import torch
    import torch.nn.functional as F
    os.environ.setdefault("TRACETUNE_KERNELS_LIB", str(pathlib.Path(TRACETUNE).parents[1] / "plugins/kernels/libtracetune_kernels.so"))
    from tracetune import _kernel_bench as kb
    cat = kb.load_catalogue(CATALOGUE, KNOBS)
    subs = {s["id"]: s for s in cat["substitutions"]}
    fp32 = cat["numerics"]["fp32"]

    def layernorm_without_bias(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, None, 1e-5) + 0 * b.sum()

    class SoftmaxOnlyGrad(torch.autograd.Function):  # forgets the one-hot term of the gradient
        @staticmethod
        def forward(ctx, logits, target):
            ctx.save_for_backward(logits)
            return F.cross_entropy(logits, target)

        @staticmethod
        def backward(ctx, g):
            (logits,) = ctx.saved_tensors
            return torch.softmax(logits, 1) * g / logits.shape[0], None

    def adamw_without_bias_correction(opt):
        with torch.no_grad():
            for group in opt.param_groups:
                for p in group["params"]:
                    st = opt.state[p]
                    if not st:
                        st["exp_avg"], st["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    st["exp_avg"].mul_(0.9).add_(p.grad, alpha=0.1)
                    st["exp_avg_sq"].mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
                    p.addcdiv_(st["exp_avg"], st["exp_avg_sq"].sqrt().add_(1e-8), value=-group["lr"])

    for sub, bad, shape in (("layernorm", layernorm_without_bias, (16, 40)),
                            ("cross_entropy", lambda l, t: SoftmaxOnlyGrad.apply(l, t), (8, 301)),
                            ("optimizer", adamw_without_bias_correction, (3, 100))):
        r = kb.evaluate(subs[sub], bad, shape, "cpu", fp32, warmup=0, repeats=3)
        check(f"{sub}: wrong implementation refused by parity", r["verdict"] == "refused: parity" and not r["parity"]["pass"],
              str(r))
        check(f"{sub}: refused before timing", "ratio" not in r, str(r))
    good = kb.evaluate(subs["cross_entropy"], "tracetune", (8, 301), "cpu", fp32, warmup=0, repeats=3)
    check("the real kernel passes the same check", good["parity"]["pass"], str(good))


def case_catalogue(tmp):
    from tracetune import _kernel_bench as kb
    cat = kb.load_catalogue(CATALOGUE, KNOBS)
    check("built-in catalogue has the three substitutions",
          [s["id"] for s in cat["substitutions"]] == ["layernorm", "cross_entropy", "optimizer"])
    check("every entry has an implementation of our kernel pack",
          all(any(i["name"] == "tracetune" for i in s["impl"]) for s in cat["substitutions"]))
    text = CATALOGUE.read_text()
    tmp = pathlib.Path(tmp)
    for name, broken, expect in (
            ("knob", text.replace('knob = "kernels.layernorm"', 'knob = "kernels.nope"'), "substitution 1 (layernorm)"),
            ("value", text.replace('name = "optimizer.foreach=true"', 'name = "optimizer.foreach=maybe"'),
             "substitution 3 (optimizer)"),
            ("class", text.replace('numerics = "fp32"\n\n[[substitution.impl]]\nname = "tracetune"\ndevices = ["cpu", "cuda"]\n'
                                   'dtypes = ["float32"]\nrequires = "kernel-pack"\ndoc = "fused softmax',
                                   'numerics = "fp8"\n\n[[substitution.impl]]\nname = "tracetune"\ndevices = ["cpu", "cuda"]\n'
                                   'dtypes = ["float32"]\nrequires = "kernel-pack"\ndoc = "fused softmax'),
             "substitution 2 (cross_entropy)"),
            ("field", text.replace("min_share = 0.03\n", "min_share = 0.03\nshare = 1\n", 1), "substitution 1")):
        path = tmp / f"{name}.toml"
        path.write_text(broken)
        try:
            kb.load_catalogue(path, KNOBS)
            check(f"broken catalogue ({name}) refused", False, "accepted")
        except ValueError as e:
            check(f"broken catalogue ({name}) refused, naming file and entry", str(path) in str(e) and expect in str(e), str(e))


def case_usage(tmp):
    for args, what in ((["--shapes", "layernorm=abc"], "ROWSxCOLS"), (["--only", "softmax"], "not a substitution"),
                       (["--shapes", "gelu=2x2"], "not a substitution")):
        r = bench(*args)
        lines = r.stderr.strip().splitlines()
        check(f"{args}: exit 2 with one line", r.returncode == 2 and len(lines) == 1 and what in r.stderr, r.stderr)
    r = subprocess.run([TRACETUNE, "bench", "kernels", "--python", "/nonexistent/python"], capture_output=True, text=True)
    check("missing interpreter: exit 2 with one line", r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr)


def case_job_optimizer(tmp):
    """The optimizer entry on the job's own optimizer (the description the trace records):
    a configuration the fused step implements is measured with parity; one the numerics guard
    refuses (amsgrad, an option it does not know) is refused without measuring."""
    import torch
    os.environ.setdefault("TRACETUNE_KERNELS_LIB", str(pathlib.Path(TRACETUNE).parents[1] / "plugins/kernels/libtracetune_kernels.so"))
    from tracetune import _fused_optim
    from tracetune import _kernel_bench as kb
    cat = kb.load_catalogue(CATALOGUE, KNOBS)
    p = [torch.nn.Parameter(torch.randn(4)) for _ in range(3)]
    two_groups = _fused_optim.describe(torch.optim.AdamW([{"params": p[:1]}, {"params": p[1:], "lr": 3e-3,
                                                           "weight_decay": 0.05}], lr=1e-2, betas=(0.8, 0.99)))
    amsgrad = _fused_optim.describe(torch.optim.Adam(p, lr=1e-2, amsgrad=True))
    unknown = dict(two_groups, groups=[dict(g, lookahead_k=5) for g in two_groups["groups"]])
    for name, desc, refused in (("AdamW, two groups", two_groups, False), ("Adam amsgrad", amsgrad, True),
                                ("an option the guard does not know", unknown, True)):
        res = [r for r in kb.run(cat, only=["optimizer"], shapes={"optimizer": "6x500"}, warmup=0, repeats=3,
                                 optimizer=json.loads(json.dumps(desc))) if r["impl"] == "tracetune"]
        verdict = res[0]["verdict"] if res else "missing"
        if refused:
            check(f"job optimizer {name}: the fused step is refused by the guard, not measured",
                  verdict.startswith("refused: the numerics guard") and "ratio" not in res[0], res)
        else:
            check(f"job optimizer {name}: measured with parity", res and res[0].get("parity", {}).get("pass")
                  and "ratio" in res[0], res)


if __name__ == "__main__":
    run_cases({"cli": case_cli, "wrong": case_wrong, "catalogue": case_catalogue, "usage": case_usage,
               "job_optimizer": case_job_optimizer}, only=[CASE])
