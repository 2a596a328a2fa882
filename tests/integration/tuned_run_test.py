#!/usr/bin/env python3
"""`tracetune run --config`: refused configs (one line, exit 2, the job never starts), settings
reaching real jobs (environment variables, the DataLoader sample, a 2-rank gloo DDP job under
torchrun, read back from inside the jobs), exit codes and signals passed through, the private
files, and the Python integration's own checks.

usage: tuned_run_test.py TRACETUNE SOURCE_DIR [CASE...]
"""
import os
import pathlib
import re
import signal
import subprocess
import sys

TRACETUNE = sys.argv[1]
SRC = pathlib.Path(sys.argv[2])
ONLY = set(sys.argv[3:])
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import TORCH_PYTHON as PY, TORCHRUN  # noqa: E402  (Debian's torch 1.13, or TT_TORCH_PYTHON's)
SAMPLES = SRC / "samples"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, free_port, run_cases  # noqa: E402


def config(tmp, text, name="tuned.toml", mode=0o600):
    p = pathlib.Path(tmp) / name
    p.write_text(text)
    os.chmod(p, mode)
    return p


def run(cfg, *cmd, extra=(), **kw):
    return subprocess.run([TRACETUNE, "run", "--config", str(cfg), *extra, "--", *cmd], capture_output=True,
                          text=True, timeout=kw.pop("timeout", 300), **kw)


def dataset(tmp, files=64):
    d = pathlib.Path(tmp) / "data"
    subprocess.run([PY, str(SAMPLES / "dataloader/make_dataset.py"), str(d), "--files", str(files)], check=True,
                   capture_output=True)
    return d


def case_bad_configs(tmp):
    marker = pathlib.Path(tmp) / "ran"
    job = ["/bin/sh", "-c", f"touch {marker}"]
    good = '[settings]\n"dataloader.num_workers" = 2\n'
    cases = {
        "unknown key": ('[settings]\n"dataloader.num_workerz" = 2\n', r'unknown knob "dataloader.num_workerz"'),
        "wrong type": ('[settings]\n"dataloader.num_workers" = "two"\n', r"expected an integer"),
        "float for int": ('[settings]\n"dataloader.num_workers" = 2.5\n', r"expected an integer"),
        "out of range": ('[settings]\n"nccl.socket_nthreads" = 17\n', r"out of range \(allowed 1 to 16\)"),
        "enum value": ('[settings]\n"amp.dtype" = "fp8"\n[meta]\nnumerics = true\n', r'"fp8" is not one of none, bf16, fp16'),
        "LD_PRELOAD in settings": ('[settings]\nLD_PRELOAD = "/tmp/evil.so"\n', r"LD_PRELOAD is refused: .*load code"),
        "LD_PRELOAD top level": ('LD_PRELOAD = "/tmp/evil.so"\n', r"LD_PRELOAD is refused"),
        "PYTHONPATH in settings": ('[settings]\nPYTHONPATH = "/tmp"\n', r"PYTHONPATH is refused"),
        "CUDA_INJECTION64_PATH": ('[settings]\nCUDA_INJECTION64_PATH = "/tmp/x.so"\n', r"CUDA_INJECTION64_PATH is refused"),
        "NCCL_TUNER_PLUGIN": ('[settings]\nNCCL_TUNER_PLUGIN = "/tmp/x.so"\n', r"NCCL_TUNER_PLUGIN is refused"),
        "raw env table": ('[env]\nNCCL_ALGO = "Ring"\n', r"raw environment variables are not accepted"),
        "raw known env var": ('[settings]\nNCCL_ALGO = "Ring"\n', r'use the knob id "nccl.algo"'),
        "numerics not allowed": ('[settings]\n"torch.tf32_matmul" = true\n', r"changes numerics; add 'numerics = true'"),
        "min above max channels": ('[settings]\n"nccl.min_nchannels" = 8\n"nccl.max_nchannels" = 4\n', r"above nccl.max_nchannels"),
        "too many sockets": ('[settings]\n"nccl.socket_nthreads" = 16\n"nccl.nsocks_perthread" = 8\n', r"at most 64 sockets"),
        "malformed TOML": ('[settings\n"dataloader.num_workers" = 2\n', r"line 1: not valid TOML"),
        "unknown table": ('[tuning]\nx = 1\n', r"unknown key 'tuning'"),
        "bad nccl table": ('[[nccl.table]]\ncollective = "allreduce"\nmin_bytes = 0\nmax_bytes = 10\nalgorithm = "ring"\n'
                           'protocol = "LL512"\n', r'protocol "LL512" is not one of'),
        "table in settings": ('[settings]\n"nccl.tuner_table" = 1\n', r"written as \[\[nccl.table\]\] entries"),
        # hardening (issue 17): one knob spelled twice; nesting that overflowed toml++'s stack
        "quoted and dotted duplicate": ('[settings]\n"dataloader.num_workers" = 2\ndataloader.num_workers = 8\n',
                                        r'c.toml: line 3: settings: dataloader.num_workers sets dataloader.num_workers '
                                        r'again \(first set at line 2 as "dataloader.num_workers"\)'),
        "50,000-level dotted key": ("[settings]\n" + ".".join(["a"] * 50000) + " = 1\n", r"line 2: .*nested deeper than 32"),
        "50,000 nested arrays": ("[meta]\nx = " + "[" * 50000 + "]" * 50000 + "\n", r"line 2: .*nested deeper than 32"),
        "long key": ("[settings]\n" + "k" * 5000 + " = 1\n", r"line 2: a key longer than 1024 characters"),
    }
    for name, (text, pattern) in cases.items():
        cfg = config(tmp, text, name="c.toml")
        r = run(cfg, *job)
        lines = r.stderr.strip().splitlines()
        check(f"bad config ({name}): exit 2, one line, the reason", r.returncode == 2 and len(lines) == 1 and
              re.search(pattern, r.stderr) and "c.toml" in r.stderr, f"rc={r.returncode} {r.stderr!r}")
        check(f"bad config ({name}): the job did not run", not marker.exists())
    cfg = config(tmp, good, name="gw.toml", mode=0o620)
    r = run(cfg, *job)
    check("group-writable config refused", r.returncode == 2 and "writable by group" in r.stderr and not marker.exists(),
          r.stderr)
    cfg = config(tmp, good, name="ow.toml", mode=0o602)
    r = run(cfg, *job)
    check("other-writable config refused", r.returncode == 2 and "writable by others" in r.stderr and not marker.exists(),
          r.stderr)
    r = run(pathlib.Path(tmp) / "missing.toml", *job)
    check("missing config: exit 2, one line", r.returncode == 2 and "missing.toml: cannot open" in r.stderr and
          len(r.stderr.strip().splitlines()) == 1 and not marker.exists(), r.stderr)
    r = run(pathlib.Path(tmp), *job)
    check("a directory as config refused", r.returncode == 2 and "not a regular file" in r.stderr and not marker.exists(),
          r.stderr)
    if os.geteuid() == 0:  # as root we can hand the file to someone else
        cfg = config(tmp, good, name="theirs.toml")
        os.chown(cfg, 65534, 65534)
        r = run(cfg, *job)
        check("a config owned by another user is refused", r.returncode == 2 and "not by you" in r.stderr and
              not marker.exists(), r.stderr)
    shared = pathlib.Path(tmp) / "shared"  # a 0600 config in a world-writable directory: applied, with a warning
    shared.mkdir()
    os.chmod(shared, 0o777)
    r = run(config(shared, good, name="s.toml"), extra=["--check"])
    check("a config in a world-writable directory is applied with a warning", r.returncode == 0 and
          "warning: " in r.stderr and "is writable by others" in r.stderr and not marker.exists(), r.stderr)
    cfg = config(tmp, good, name="ok.toml")
    r = run(cfg, extra=["--check"])
    check("--check accepts a good config and runs nothing", r.returncode == 0 and "dataloader.num_workers = 2" in r.stderr
          and not marker.exists(), r.stderr)
    r = run(cfg, *job)
    check("the same config, good: the job runs", r.returncode == 0 and marker.exists(), r.stderr)


def case_env_and_files(tmp):
    cfg = config(tmp, '[meta]\nspeedup = 1.2\ntrials = 3\nfindings = ["exposed_communication"]\n\n'
                      '[settings]\nnccl.socket_nthreads = 4\nnccl.nsocks_perthread = 2\n"nccl.algo" = ["Ring", "Tree"]\n'
                      '"cpu.omp_num_threads" = 3\n"dataloader.pin_memory" = true\n')
    probe = ("import json, os, stat\n"
             "p = os.environ['TRACETUNE_APPLY']\n"
             "print(os.environ['NCCL_SOCKET_NTHREADS'], os.environ['NCCL_NSOCKS_PERTHREAD'], os.environ['NCCL_ALGO'],\n"
             "      os.environ['OMP_NUM_THREADS'])\n"
             "print(oct(stat.S_IMODE(os.stat(p).st_mode)), oct(stat.S_IMODE(os.stat(os.path.dirname(p)).st_mode)))\n"
             "print(json.load(open(p))['settings'])\n"
             "print(os.environ['PYTHONPATH'])\n"
             "print(p)\n")
    env = {**os.environ, "NCCL_SOCKET_NTHREADS": "1", "PYTHONPATH": "/opt/user/lib"}
    r = run(cfg, PY, "-c", probe, env=env)
    out = r.stdout.splitlines()
    check("env knobs reach the job (inherited value replaced)", r.returncode == 0 and out and out[0] == "4 2 Ring,Tree 3",
          r.stdout + r.stderr)
    check("settings file is 0600 in a 0700 directory", len(out) > 1 and out[1] == "0o600 0o700", r.stdout)
    check("settings file holds only the Python knobs", len(out) > 2 and out[2] == "{'dataloader.pin_memory': True}", r.stdout)
    check("PYTHONPATH: the integration first, the job's own value kept",
          len(out) > 3 and out[3].endswith(":/opt/user/lib") and out[3].split(":")[0].endswith("plugins/python"), r.stdout)
    check("private files removed after the job", len(out) > 4 and not os.path.exists(os.path.dirname(out[4])), r.stdout)
    check("one line per setting printed", all(s in r.stderr for s in
          ("NCCL_SOCKET_NTHREADS=4  (nccl.socket_nthreads)", "NCCL_ALGO=Ring,Tree  (nccl.algo)",
           "OMP_NUM_THREADS=3  (cpu.omp_num_threads)", "dataloader.pin_memory = true  (Python integration)")), r.stderr)


def case_nccl_table(tmp):
    cfg = config(tmp, '[[nccl.table]]\ncollective = "AllReduce"\nmin_bytes = 0\nmax_bytes = 65536\nalgorithm = "Tree"\n'
                      'protocol = "LL"\n\n[[nccl.table]]\ncollective = "allgather"\nmin_bytes = 1024\nmax_bytes = 1048576\n'
                      'algorithm = "ring"\nprotocol = "simple"\nchannels = 8\nnodes = 2\n')
    probe = ("import os\n"
             "plugin = os.environ['NCCL_TUNER_PLUGIN']\n"
             "print(os.path.isfile(plugin), os.path.basename(plugin))\n"
             "print(open(os.environ['TRACETUNE_NCCL_TABLE']).read(), end='')\n")
    r = run(cfg, PY, "-c", probe, env={**os.environ, "NCCL_TUNER_PLUGIN": "/tmp/someone-elses.so"})
    out = r.stdout.splitlines()
    check("nccl table: our tuner plugin replaces an inherited NCCL_TUNER_PLUGIN",
          r.returncode == 0 and out and out[0] == "True libnccl-tuner-tracetune.so", r.stdout + r.stderr)
    check("nccl table: the table file the plugin reads",
          out[1:] == ["tracetune-nccl-table 1", "# collective min_bytes max_bytes algorithm protocol channels nodes ranks",
                      "allreduce 0 65536 tree ll 0 -1 -1", "allgather 1024 1048576 ring simple 8 2 -1"], r.stdout)
    check("nccl table: reported", "nccl.tuner_table: 2 entries  (NCCL tuner plugin)" in r.stderr, r.stderr)


def case_under_record(tmp):
    """`run --config cfg -- tracetune record -- JOB` (what gpu-check's tuned NCCL run does): the
    inner record keeps the variables run --config set for the job (the NCCL table, the Python
    settings) and still drops an outer recording's own (output directory, no-env switch)."""
    cfg = config(tmp, '[settings]\n"dataloader.pin_memory" = true\n\n[[nccl.table]]\ncollective = "allreduce"\n'
                      'min_bytes = 0\nmax_bytes = 65536\nalgorithm = "ring"\nprotocol = "simple"\n')
    probe = ("import json, os\n"
             "print(open(os.environ['TRACETUNE_NCCL_TABLE']).read().splitlines()[2])\n"
             "print(json.load(open(os.environ['TRACETUNE_APPLY']))['settings'])\n"
             "print(os.path.basename(os.environ['NCCL_TUNER_PLUGIN']))\n"
             "print(os.environ['TRACETUNE_OUTPUT_DIR'])\n"
             "print(os.environ.get('TRACETUNE_NO_ENV', '-'))\n")
    db = pathlib.Path(tmp) / "inner.db"
    outer = {**os.environ, "TRACETUNE_OUTPUT_DIR": str(pathlib.Path(tmp) / "outer.raw"), "TRACETUNE_NO_ENV": "1"}
    r = run(cfg, TRACETUNE, "record", "-o", str(db), "--trace", "io,python", "--", PY, "-c", probe, env=outer)
    out = r.stdout.splitlines()
    check("under record: the job exits 0", r.returncode == 0, r.stdout + r.stderr[-1500:])
    check("under record: the NCCL table reaches the job (TRACETUNE_NCCL_TABLE kept)",
          out[:1] == ["allreduce 0 65536 ring simple 0 -1 -1"], r.stdout + r.stderr[-800:])
    check("under record: the Python settings reach the job (TRACETUNE_APPLY kept)",
          out[1:2] == ["{'dataloader.pin_memory': True}"], r.stdout)
    check("under record: our tuner plugin", out[2:3] == ["libnccl-tuner-tracetune.so"], r.stdout)
    check("under record: the outer recording's variables are replaced or dropped",
          out[3:5] == [str(db) + ".raw", "-"], r.stdout)
    check("under record: the trace was written", db.exists(), r.stderr[-800:])


def case_exit_codes(tmp):
    cfg = config(tmp, '[settings]\n"torch.num_threads" = 2\n')
    r = run(cfg, PY, "-c", "import sys; print('hello'); sys.exit(7)")
    check("exit code passes through", r.returncode == 7, f"rc={r.returncode}")
    check("stdout untouched", r.stdout == "hello\n", repr(r.stdout))
    r = run(cfg, PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    check("a job killed by SIGTERM: tracetune dies of SIGTERM too", r.returncode == -signal.SIGTERM, f"rc={r.returncode}")
    r = run(cfg, "/nonexistent/program")
    check("a command that cannot start", r.returncode == 127 and "nonexistent" in r.stderr, f"{r.returncode} {r.stderr}")
    p = subprocess.Popen([TRACETUNE, "run", "--config", str(cfg), "--", PY, "-c",
                          "import signal, sys, time\n"
                          "signal.signal(signal.SIGTERM, lambda *a: (print('got TERM', flush=True), sys.exit(3)))\n"
                          "print('ready', flush=True)\ntime.sleep(60)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = p.stdout.readline().strip()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    check("SIGTERM to tracetune run reaches the job", ready == "ready" and "got TERM" in out and p.returncode == 3,
          f"rc={p.returncode} {out} {err}")


def case_dataloader(tmp):
    data = dataset(tmp)
    cfg = config(tmp, '[settings]\n"dataloader.num_workers" = 2\n"dataloader.prefetch_factor" = 3\n')
    r = run(cfg, PY, str(SAMPLES / "dataloader/train.py"), str(data), "--num-workers", "0", "--steps", "4",
            "--batch-size", "8")
    check("dataloader: job succeeds", r.returncode == 0 and r.stdout.startswith("steps=4 "), r.stdout + r.stderr[-2000:])
    check("dataloader: num_workers 2 and prefetch_factor 3 in effect inside the job",
          "loader num_workers=2 pin_memory=False prefetch_factor=3" in r.stdout, r.stdout)
    check("dataloader: the override is logged once", r.stderr.count("DataLoader num_workers 0 -> 2 (tuned config)") == 1,
          r.stderr)
    # the job's own sitecustomize still runs after ours
    user = pathlib.Path(tmp) / "usersite"
    user.mkdir()
    (user / "sitecustomize.py").write_text("print('user sitecustomize ran', flush=True)\n")
    cfg = config(tmp, '[settings]\n"dataloader.num_workers" = 0\n', name="zero.toml")
    r = run(cfg, PY, str(SAMPLES / "dataloader/train.py"), str(data), "--num-workers", "2", "--prefetch-factor", "4",
            "--persistent-workers", "--steps", "2", "--batch-size", "8", env={**os.environ, "PYTHONPATH": str(user)})
    check("dataloader: num_workers 0 from the config wins over --num-workers 2 (prefetch/persistent dropped)",
          r.returncode == 0 and "loader num_workers=0" in r.stdout, r.stdout + r.stderr[-2000:])
    check("dataloader: the job's own sitecustomize still runs", r.stdout.startswith("user sitecustomize ran\n"), r.stdout)
    r = subprocess.run([PY, str(SAMPLES / "dataloader/train.py"), str(data), "--steps", "2", "--batch-size", "8"],
                       capture_output=True, text=True, timeout=300)
    check("dataloader: without tracetune run the sample keeps its own 0 workers", "loader num_workers=0" in r.stdout,
          r.stdout + r.stderr[-1000:])


def case_ddp(tmp):
    data = dataset(tmp)
    cfg = config(tmp, '[settings]\nddp.bucket_cap_mb = 3\n"ddp.gradient_as_bucket_view" = true\n')
    # Debian's torch 1.13 torchrun fails on Python 3.11 with its default --redirects/--tee of 0
    r = run(cfg, TORCHRUN, "--nproc_per_node", "2", "--master_port", free_port(), "--redirects", "2", "--tee", "2",
            "--log_dir", str(pathlib.Path(tmp) / "logs"), str(SAMPLES / "ddp/train_ddp.py"), str(data),
            "--steps", "3", "--batch-size", "8", timeout=600)
    caps = re.findall(r"rank (\d)/2 backend=gloo bucket_cap_bytes=(\d+)", r.stdout)
    check("ddp: torchrun job succeeds", r.returncode == 0, r.stdout[-1000:] + r.stderr[-2000:])
    check("ddp: bucket_cap_mb 3 in effect in both ranks (DDP's bucket_bytes_cap)",
          sorted(caps) == [("0", str(3 * 1024 * 1024)), ("1", str(3 * 1024 * 1024))], f"{caps} {r.stdout[-500:]}")


def case_ddp_hierarchical(tmp):
    """ddp.comm_hook = "hierarchical" through `run --config` on the DDP sample: 4 gloo ranks
    under torchrun, grouped as two simulated nodes of 2 (TRACETUNE_RANKS_PER_NODE); then 2
    ranks, one node: plain all-reduce with one warning per process."""
    data = dataset(tmp)
    cfg = config(tmp, '[settings]\n"ddp.comm_hook" = "hierarchical"\n')
    logs = pathlib.Path(tmp) / "logs"

    def job(nproc, env):
        return run(cfg, TORCHRUN, "--nproc_per_node", str(nproc), "--master_port", free_port(), "--redirects",
                   "2", "--tee", "2", "--log_dir", str(logs / str(nproc)), str(SAMPLES / "ddp/train_ddp.py"), str(data),
                   "--steps", "2", "--batch-size", "4", env=env, timeout=300)
    r = job(4, {**os.environ, "TRACETUNE_RANKS_PER_NODE": "2"})
    check("hierarchical: 4-rank torchrun job succeeds", r.returncode == 0, r.stdout[-1000:] + r.stderr[-2000:])
    on = re.findall(r"ddp\.comm_hook = hierarchical: 2 nodes of 2 ranks \(gloo\)", r.stdout + r.stderr)
    check("hierarchical: the hook is on in all 4 ranks (2 nodes of 2)", len(on) == 4, (r.stdout + r.stderr)[-3000:])
    check("hierarchical: every rank trained", len(re.findall(r"rank \d: steps=2 loss=", r.stdout)) == 4, r.stdout[-1500:])
    r = job(2, dict(os.environ))
    one = re.findall(r"ddp\.comm_hook = hierarchical: all 2 ranks are on one node; plain all-reduce", r.stdout + r.stderr)
    check("hierarchical on one node: plain all-reduce, one warning per process", r.returncode == 0 and len(one) == 2,
          (r.stdout + r.stderr)[-3000:])


def case_optimizer_flags(tmp):
    """optimizer.fused / optimizer.foreach in-process: fused runs on CPU where PyTorch has CPU
    fused kernels (2.x) and is refused with one line where it has not (1.13: CUDA only); an
    AdamW (whose __init__ calls Adam's) says so once, not twice."""
    probe = (f"import sys; sys.path.insert(0, {str(SRC / 'plugins/python')!r})\n"
             "import tracetune\n"
             "tracetune.apply({'optimizer.fused': True})\n"
             "import torch\n"
             "try:\n    from torch.utils._foreach_utils import _get_fused_kernels_supported_devices as devices\n"
             "except ImportError:\n    devices = lambda: ['cuda']\n"
             "cpu = 'cpu' in devices()\n"
             "p = torch.nn.Parameter(torch.randn(8)); p.grad = torch.randn(8)\n"
             "opt = torch.optim.AdamW([p], lr=1e-3); opt.step()\n"
             "print('cpu_fused', cpu, 'fused', opt.param_groups[0].get('fused'))\n")
    r = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=300)
    out = r.stdout.strip()
    lines = [l for l in r.stderr.splitlines() if "fused" in l]
    check("optimizer.fused: the job runs", r.returncode == 0, r.stderr[-1500:])
    if "cpu_fused True" in out:
        check("optimizer.fused on CPU (PyTorch 2.x): AdamW fused=True", out.endswith("fused True"), out)
        check("optimizer.fused on CPU: said once", len(lines) == 1 and "AdamW fused=True (tuned config)" in lines[0], lines)
    else:
        check("optimizer.fused on CPU (PyTorch 1.x, CUDA only): not applied", not out.endswith("fused True"), out)
        check("optimizer.fused on CPU: refused once, saying why", len(lines) == 1 and (
            "parameters on cpu" in lines[0] or "AdamW has no fused implementation" in lines[0]), lines)


FIRST_MODEL_JOB = """
import sys, torch
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x = torch.randn(4, 8)
first = model(x)
if sys.argv[1] == "compile":  # the second call would compile (minutes of C++ on a small CPU): stop here
    print("compiled_in_place", getattr(model, "_compiled_call_impl", None) is not None)
else:
    print("dtypes", first.dtype, model(x).dtype)
"""


def case_first_model(tmp):
    """amp.dtype = bf16 and compile.mode in a job without DDP: applied to the first module the
    job calls (its model), in place, from its second call on; on torch 1.13 compile.mode is
    refused with one line and bf16 autocast applies."""
    amp_cfg = config(tmp, '[meta]\nnumerics = true\n[settings]\n"amp.dtype" = "bf16"\n', name="amp.toml")
    amp = run(amp_cfg, PY, "-c", FIRST_MODEL_JOB, "amp")
    check("amp.dtype = bf16 without DDP: the job runs", amp.returncode == 0, amp.stderr[-1500:])
    check("amp.dtype = bf16: the model's second call runs under bf16 autocast",
          "dtypes torch.float32 torch.bfloat16" in amp.stdout and "the job's model (Sequential" in amp.stderr,
          amp.stdout + amp.stderr[-1000:])
    comp = run(config(tmp, '[settings]\n"compile.mode" = "default"\n', name="compile.toml"), PY, "-c", FIRST_MODEL_JOB,
               "compile")
    check("compile.mode without DDP: the job runs", comp.returncode == 0, comp.stderr[-1500:])
    has_compile = subprocess.run([PY, "-c", "import torch, sys; sys.exit(0 if hasattr(torch.nn.Module, 'compile') else 1)"]
                                 ).returncode == 0
    if has_compile:
        check("compile.mode: the job's model is compiled in place after its first call",
              "compiled_in_place True" in comp.stdout and comp.stderr.count("compiled in place") == 1,
              comp.stdout + comp.stderr[-1000:])
    else:
        check("compile.mode on a PyTorch without module compile: one line, not applied",
              "compiled_in_place False" in comp.stdout and comp.stderr.count("not applied") == 1,
              comp.stdout + comp.stderr[-1000:])


TORCH2_KNOBS_JOB = """
import sys, torch
F = torch.nn.functional
what = sys.argv[1]
if what == "precision":
    model = torch.nn.Linear(8, 8)
    model(torch.randn(2, 8))
    print("precision", torch.get_float32_matmul_precision())
elif what == "sdpa":
    class Attention(torch.nn.Module):
        def forward(self, q):
            return F.scaled_dot_product_attention(q, q, q) if hasattr(F, "scaled_dot_product_attention") else q
    q = torch.randn(2, 4, 16, 8)
    with torch.profiler.profile() as prof:
        out = Attention()(q)
    ran = sorted({e.name for e in prof.events() if "_scaled_dot_product" in e.name})
    ref = torch.softmax(q @ q.transpose(-1, -2) / 8 ** 0.5, dim=-1) @ q if ran else q
    b = torch.backends.cuda
    flags = [f"{n}={getattr(b, n)()}" for n in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled",
                                                "cudnn_sdp_enabled") if hasattr(b, n)]
    print("sdpa", " ".join(flags), "ran", ",".join(ran) or "-", "same", torch.allclose(out, ref, atol=1e-5))
else:  # channels_last: a small CNN (conv) or an MLP (mlp)
    if what == "conv":
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3))
        x = torch.randn(2, 3, 12, 12)
    else:
        net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        x = torch.randn(4, 8)
    w = [p.detach().clone() for p in net.parameters()]
    seen = []
    net[0].register_forward_pre_hook(lambda m, a: seen.append(a[0].is_contiguous(memory_format=torch.channels_last)))
    out, out2 = net(x), net(x)
    if what == "conv":
        ref = F.conv2d(F.relu(F.conv2d(x, w[0], w[1])), w[2], w[3])
        weight_cl = net[0].weight.is_contiguous(memory_format=torch.channels_last)
    else:
        ref, weight_cl = F.linear(F.relu(F.linear(x, w[0], w[1])), w[2], w[3]), False
    print("weights_cl", weight_cl, "inputs_cl", seen, "job_x_kept", x.is_contiguous(),
          "same", torch.allclose(out, ref, atol=1e-5) and torch.equal(out, out2))
"""


def torch2_facts():
    probe = ("import torch; F = torch.nn.functional; print(hasattr(F, 'scaled_dot_product_attention'), "
             "hasattr(torch.backends.mkldnn, 'matmul'))")
    out = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=300).stdout.split()
    return out[0] == "True", out[1] == "True"


def case_torch2_knobs(tmp):
    """torch.matmul_precision, sdpa.backend and memory.channels_last through `run --config`, read
    back from inside CPU jobs: what PyTorch 2.x applies, and what 1.13 (no scaled_dot_product_
    attention, precision for CUDA only) says once and leaves unchanged."""
    has_sdpa, cpu_precision = torch2_facts()

    def job(name, text, *args):
        r = run(config(tmp, text, name=f"{name}.toml"), PY, "-c", TORCH2_KNOBS_JOB, *args)
        check(f"{name}: the job runs", r.returncode == 0, r.stderr[-1500:])
        return r.stdout.strip(), r.stderr

    refused = run(config(tmp, '[settings]\n"torch.matmul_precision" = "medium"\n', name="p0.toml"), PY, "-c", "pass")
    check("torch.matmul_precision = medium without numerics: refused", refused.returncode == 2 and
          "changes numerics" in refused.stderr, refused.stderr[-500:])
    out, err = job("precision", '[meta]\nnumerics = true\n[settings]\n"torch.matmul_precision" = "medium"\n', "precision")
    check("torch.matmul_precision = medium: in effect in the job", out == "precision medium", out + err[-800:])
    cpu_note = err.count("documents the setting for CUDA matmuls only")
    check("torch.matmul_precision on a CPU model: the CUDA-only note once where oneDNN does not follow it",
          cpu_note == (0 if cpu_precision else 1), err[-800:])
    _sdpa_checks(job, has_sdpa)
    out, err = job("cl_conv", '[settings]\n"memory.channels_last" = true\n', "conv")
    check("memory.channels_last: the conv model's weights and its inputs (first call on) are channels-last, the job's "
          "own tensor untouched, same outputs", out == "weights_cl True inputs_cl [True, True] job_x_kept True same True"
          and err.count("channels-last") == 1, out + err[-800:])
    out, err = job("cl_mlp", '[settings]\n"memory.channels_last" = true\n', "mlp")
    check("memory.channels_last on a model without 4-D weights: unchanged, said once",
          out == "weights_cl False inputs_cl [False, False] job_x_kept True same True" and
          err.count("no 4-D (convolution) weights; not applied") == 1, out + err[-800:])


def _sdpa_checks(job, has_sdpa):
    if not has_sdpa:  # PyTorch 1.x: no public scaled_dot_product_attention
        out, err = job("sdpa_old", '[settings]\n"sdpa.backend" = "math"\n', "sdpa")
        check("sdpa.backend on PyTorch 1.x: one line, switches unchanged", "flash_sdp_enabled=True" in out and
              "math_sdp_enabled=True" in out and err.count("sdpa.backend = math:") == 1 and "needs PyTorch 2.0" in err,
              out + err[-800:])
        return
    out, err = job("sdpa_math", '[settings]\n"sdpa.backend" = "math"\n', "sdpa")
    check("sdpa.backend = math: only math enabled, math ran on the CPU, same result",
          "flash_sdp_enabled=False mem_efficient_sdp_enabled=False math_sdp_enabled=True" in out and
          "ran aten::_scaled_dot_product_attention_math same True" in out and err.count("sdpa.backend = math:") == 1,
          out + err[-800:])
    out, err = job("sdpa_flash", '[settings]\n"sdpa.backend" = "flash"\n', "sdpa")
    check("sdpa.backend = flash: flash and the math fallback enabled, the CPU flash kernel ran, same result",
          "flash_sdp_enabled=True mem_efficient_sdp_enabled=False math_sdp_enabled=True" in out and
          "flash_attention_for_cpu same True" in out and "cudnn_sdp_enabled=True" not in out, out + err[-800:])
    out, err = job("sdpa_eff", '[settings]\n"sdpa.backend" = "efficient"\n', "sdpa")
    check("sdpa.backend = efficient on a CPU model: not applied (no CPU kernel), said once, PyTorch's default ran",
          "flash_sdp_enabled=True mem_efficient_sdp_enabled=True math_sdp_enabled=True" in out and
          "flash_attention_for_cpu same True" in out and err.count("no efficient kernel; not applied") == 1,
          out + err[-800:])


def case_python_api(tmp):
    """tracetune.apply() in-process, no `tracetune run`: a dict, a tuned.toml, refusals, and the
    Python table of knobs against the catalogue."""
    pyplug = SRC / "plugins/python"
    toml_cfg = config(tmp, '[settings]\n"dataloader.num_workers" = 1\n"torch.num_threads" = 3\n"nccl.algo" = "Ring"\n')
    probe = (f"import sys; sys.path.insert(0, {str(pyplug)!r})\n"
             "import tracetune\n"
             f"print(sorted(tracetune.apply({str(toml_cfg)!r}).items()))\n"
             "import torch\n"
             "from torch.utils.data import DataLoader\n"
             "print('threads', torch.get_num_threads(), 'workers', DataLoader(list(range(4))).num_workers)\n"
             "try:\n    tracetune.apply({'ddp.bucket_cap_mb': 0.1})\nexcept ValueError as e:\n    print('refused', e)\n"
             "try:\n    tracetune.apply({'torch.tf32_matmul': 1})\nexcept ValueError as e:\n    print('refused', e)\n")
    r = subprocess.run([PY, "-c", probe], capture_output=True, text=True, timeout=300)
    out = r.stdout.splitlines()
    check("apply(tuned.toml): Python knobs taken, others reported", r.returncode == 0 and out and
          out[0] == "[('dataloader.num_workers', 1), ('torch.num_threads', 3)]" and "nccl.algo: not a framework setting"
          in r.stderr, r.stdout + r.stderr[-1500:])
    check("apply(): settings in effect after torch is imported", "threads 3 workers 1" in out, r.stdout)
    check("apply(): out-of-range and wrong-type values refused",
          any("refused ddp.bucket_cap_mb = 0.1" in line for line in out) and
          any("refused torch.tf32_matmul = 1: expected true or false" in line for line in out), r.stdout)
    # the Python knob table matches the catalogue (types, ranges, choices, numerics)
    import tomllib
    sys.path.insert(0, str(pyplug))
    from tracetune import _apply
    cat = tomllib.loads((SRC / "tuner/knobs/knobs.toml").read_text())
    py = {k["id"]: k for k in cat["knob"] if k["apply"] == "python"}
    mismatch = []
    for kid, k in py.items():
        spec = _apply.SPEC.get(kid)
        want = (k["type"], tuple(k["choices"]) if "choices" in k else k.get("min"), None if "choices" in k else k.get("max"))
        if spec is None or spec[0] != want[0] or spec[1] != want[1] or spec[2] != want[2]:
            mismatch.append((kid, spec, want))
        if k["risk"] == "numerics" and set(_apply.NUMERICS.get(kid, ())) != set(k["safe"]):
            mismatch.append((kid, "numerics", k["safe"]))
    mismatch += [(kid, "not in catalogue") for kid in _apply.SPEC if kid not in py]
    check("Python knob table matches tuner/knobs/knobs.toml", not mismatch, f"{mismatch}")


CASES = {"bad_configs": case_bad_configs, "env_and_files": case_env_and_files, "nccl_table": case_nccl_table,
         "under_record": case_under_record, "exit": case_exit_codes,
         "dataloader": case_dataloader, "ddp": case_ddp, "ddp_hierarchical": case_ddp_hierarchical,
         "python_api": case_python_api, "optimizer_flags": case_optimizer_flags,
         "first_model": case_first_model, "torch2_knobs": case_torch2_knobs}

run_cases(CASES, ONLY)
