"""gpu-check without a GPU (scripts/gpu-check.sh --rehearse): each stage runs up to the first
thing that needs a GPU, so that the 15 minutes of a lent GPU machine are not spent finding a
typo, a wrong path or a flag the CLI refuses.

Against the carried install tree and the job's Python (PyTorch 2.11 with its CUDA 13 wheels):
  - the library discovery from the nvidia-* wheels, as gpu-check and `tracetune record` do it;
  - every path `record` injects lying inside the carried tree;
  - the samples' --help, and every capture command up to the sample's no-GPU exit (one of each
    sample under record);
  - every check function run on real GPU traces as stand-ins (a Kineto trace of AlexNet, an NCCL
    Kineto trace, the committed Nsight Systems export), their GPU truths reported, not counted;
  - `run --config` applying the NCCL table through `tracetune record` (what the tuned NCCL run needs);
  - every `tracetune bench` the bench stage runs, up to its no-GPU refusal; tune's and run's flags;
  - coexist, kill, overhead and kernels run whole, on the CPU (`train_gpu.py --device cpu`).
What only a GPU can show is listed in docs/gpu-check.md ("What the rehearsal cannot show").
"""
import functools
import json
import pathlib
import sqlite3

import gpu_check as gc

# Real GPU traces standing in for the ones a GPU run records (Kineto: name -> file under the
# shared data folder; the nsys export is SQL in the repository), and the planted cases whose
# capture checks are run on each of them.
KINETO_STAND_INS = {"alexnet": "kineto/hta/alexnet.json.gz", "nccl": "kineto/hta/nccl_data.json.gz"}
NSYS_EXPORT = gc.REPO / "tests" / "data" / "nsys" / "small_export.sql"
CAPTURE_VARIANTS = (("h2d", False), ("h2d", True), ("tiny", False), ("tiny", True), ("tiny_graph", True),
                    ("sync", False), ("streams", False))


class StandIns:
    """The stand-in traces, imported once into OUT/stand_ins/ with the carried tracetune."""

    def __init__(self, shared):
        self.shared, self.dbs = shared, None

    def get(self, e, s):
        if self.dbs is None:
            self.dbs = self.load(e, s)
        return self.dbs

    def load(self, e, s):
        d = e.stage_dir("stand_ins")
        dbs = {}
        sources = {name: self.shared / rel for name, rel in KINETO_STAND_INS.items()}
        export = d / "nsys_small_export.sqlite"
        export.unlink(missing_ok=True)
        con = sqlite3.connect(export)
        con.executescript(NSYS_EXPORT.read_text())
        con.close()
        sources["nsys"] = export
        for name, src in sources.items():
            db = d / f"{name}.db"
            db.unlink(missing_ok=True)
            r = e.run([e.tracetune, "import", src, "-o", db], d / f"{name}.import.log")
            if s.check(f"stand-in {name}: {src.name} imported", r.returncode == 0 and db.exists(), r.stderr[-500:]):
                dbs[name] = db
        return dbs


def check_discovery(e, s):
    """The CUDA libraries gpu-check adds to LD_LIBRARY_PATH where the loader lacks them come from
    the Python's nvidia-* wheels (CUDA 13: nvidia/cu13/lib and nvidia/nccl/lib)."""
    s.figure("wheel_lib_dirs", e.wheel_dirs)
    for soname in gc.CUDA_SONAMES:
        found = gc.library_dir(soname, e.wheel_dirs)
        s.check(f"discovery: {soname} in the Python's nvidia-* wheels", found, e.wheel_dirs)
    probe = ("import os\nfor k in ('LD_PRELOAD', 'CUDA_INJECTION64_PATH', 'NCCL_PROFILER_PLUGIN', 'PYTHONPATH',"
             " 'TRACETUNE_CUPTI_LIB'):\n    print(k, os.environ.get(k, '-').split(':')[0])\n")
    d = e.stage_dir("capture")
    r = e.record(d / "env_probe.db", [e.python, "-c", probe], d / "env_probe.log")
    got = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    s.figure("record_injects", got)
    for key in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "NCCL_PROFILER_PLUGIN", "PYTHONPATH"):
        s.check(f"record injects {key} from the carried tree", got.get(key, "-").startswith(str(e.prefix)), got)
    cupti = pathlib.Path(got.get("TRACETUNE_CUPTI_LIB", "-"))
    s.check("record finds the wheel's libcupti.so.13 for the injection library (TRACETUNE_CUPTI_LIB)",
            cupti.name == "libcupti.so.13" and cupti.exists() and "nvidia" in cupti.parts, got)
    r = e.record(d / "env_probe_c.db", ["/usr/bin/env"], d / "env_probe_c.log")
    line = next((x for x in r.stdout.splitlines() if x.startswith("TRACETUNE_CUPTI_LIB=")), "")
    s.check("record finds it for a job that is not Python too (python3 on PATH: the Python's bin first)",
            line.endswith("/libcupti.so.13"), line or r.stdout[-300:])


def check_samples(e, s):
    """Each sample's --help; every capture command up to the sample's no-GPU exit (2, "no CUDA
    device": its arguments were accepted), the first of each sample under record."""
    d = e.stage_dir("capture")
    r = e.run([e.python, gc.SAMPLE_PY, "--help"], d / "py_help.log")
    s.check("train_gpu.py --help (PyTorch imports, every case listed)",
            r.returncode == 0 and all(c in r.stdout for c in ("h2d", "tiny", "gemm", "sync", "streams", "ddp", "train",
                                                              "--model")),
            r.stdout[-300:] + r.stderr[-300:])
    r = e.run([e.sample_cpp, "--help"], d / "cpp_help.log")
    s.check("gpu_training_loop --help (its CUDA libraries load)", r.returncode == 0 and "--case" in r.stdout, r.stderr[-300:])
    runs = gc.capture_runs(e)
    s.check("19 capture runs", len(runs) == 19, [name for name, *_ in runs])
    recorded = set()
    for name, cmd, *_ in runs:
        lang = name.split("_")[0]
        if lang not in recorded:
            recorded.add(lang)
            r = e.record(d / f"{name}.db", cmd, d / f"{name}.log")
            s.check(f"{name} under record: the summary says no GPU was seen, a trace is written",
                    "no GPU seen" in r.stderr and (d / f"{name}.db").exists(), r.stderr[-500:])
        else:
            r = e.run(cmd, d / f"{name}.log")
        s.check(f"{name}: arguments accepted, then the sample's no-GPU exit (2)",
                r.returncode == 2 and "no CUDA device" in r.stderr, f"rc={r.returncode} {r.stderr[-500:]}")


def rehearse_capture(e, s, stand_ins):
    check_discovery(e, s)
    check_samples(e, s)
    d = e.stage_dir("capture")
    for name, db in stand_ins.get(e, s).items():
        facts = gc.trace_facts(db)
        (d / f"stand_in_{name}.facts.json").write_text(json.dumps(facts, indent=1))
        s.figure(f"stand_in_{name}.kernels", facts["kernels"])
        for case, fixed in CAPTURE_VARIANTS:
            gc.check_capture(s, f"{name} as {case}{'_fixed' if fixed else ''}", case, fixed, facts, e.steps)
    s.check("the capture checks ran on every stand-in", len(stand_ins.get(e, s)) == 3, list(stand_ins.get(e, s)))


def rehearse_diagnose(e, s, stand_ins):
    d = e.stage_dir("diagnose")
    planted = list(gc.PLANTED.items())
    for i, (name, db) in enumerate(stand_ins.get(e, s).items()):
        case, category = planted[i % len(planted)]
        gc.diagnose_one(e, s, d, f"{name}_as_{case}", db, category, fixed=False)
    alexnet = stand_ins.get(e, s).get("alexnet")
    if alexnet is not None:  # its stream 7 waits on an event recorded on stream 20
        gc.diagnose_streams(e, s, d, alexnet, name="alexnet_as_streams")


def rehearse_nccl(e, s, stand_ins):
    """The trace checks on an NCCL stand-in (as one GPU and as two), the table reaching a job
    through `run --config -- tracetune record`, and torchrun's command line."""
    d = e.stage_dir("nccl")
    (d / "none.log").write_text("")  # the stand-in has no NCCL log
    db = stand_ins.get(e, s).get("nccl")
    if db is not None:
        for gpus in (1, 2):
            e.gpus = gpus
            rows = gc.check_nccl_trace(e, s, f"stand_in_{gpus}gpu", db, d / "none.log", p2p=True)
            s.figure(f"stand_in_{gpus}gpu.rows", len(rows))
        e.gpus = 0
    cfg = d / "ring_simple.toml"
    cfg.write_text(gc.RING_SIMPLE)
    cfg.chmod(0o600)
    probe = "import os; print(open(os.environ['TRACETUNE_NCCL_TABLE']).read().splitlines()[2])"
    r = e.run([e.tracetune, "run", "--config", cfg, "--", e.tracetune, "record", "-o", d / "tuned.db", "--",
               e.python, "-c", probe], d / "tuned.log")
    s.check("run --config -- tracetune record: the NCCL table reaches the job",
            r.returncode == 0 and r.stdout.strip() == "allreduce 0 1099511627776 ring simple 0 -1 -1",
            r.stdout + r.stderr[-500:])
    gc.check_tuner_log(e, s, "tuned_on_cpu", d / "tuned.log", [])
    r = e.run([e.python, "-m", "torch.distributed.run", "--nproc_per_node", "1", "--master_port", gc.free_port(),
               "--help"], d / "torchrun_help.log")
    s.check("torchrun takes the stage's arguments", r.returncode == 0, r.stderr[-500:])


def rehearse_bench(e, s, stand_ins):
    """Each bench with the stage's arguments, up to its no-GPU refusal (exit 3, one line)."""
    d = e.stage_dir("bench")
    for name, args in gc.BENCH_ARGS.items():
        r = e.run([e.tracetune, "bench", name, *args, "--json"], d / f"{name}.log")
        s.check(f"bench {name}: arguments accepted, then no GPU (exit 3, one line)",
                r.returncode == 3 and r.stderr.count("\n") == 1 and "no GPU" in r.stderr, f"rc={r.returncode} {r.stderr}")


def rehearse_tune(e, s, stand_ins):
    """tune's flags (validated before --help is honoured), a tuned.toml read back, and the
    reproduction step (bare vs run --config) on the CPU train loop."""
    d = e.stage_dir("tune")
    r = e.run([e.tracetune, "tune", "--allow-numerics", "-o", d / "x.toml", "--steps", "15", "--warmup", "3",
               "--max-trials", "6", "--help"], d / "tune_help.log")
    s.check("tune accepts the stage's flags", r.returncode == 0, r.stderr[-500:])
    cfg = d / "train.toml"
    cfg.write_text('[meta]\ntracetune = "gpu-check rehearsal"\nspeedup = 1.1\n\n[settings]\n"torch.num_threads" = 1\n')
    cfg.chmod(0o600)
    settings, meta = gc.tuned_settings(cfg)
    s.check("a tuned.toml read back (settings, speedup)", settings == {"torch.num_threads": 1} and meta["speedup"] == 1.1,
            (settings, meta))
    gc.reproduce(e, s, d, "train", cfg, rounds=1)


def stages(shared):
    """The rehearsal's stage functions, by stage name. coexist, kill, overhead and kernels run
    their real code on the CPU (Env.device == "cpu")."""
    stand_ins = StandIns(shared)
    rehearsals = {"capture": rehearse_capture, "diagnose": rehearse_diagnose, "nccl": rehearse_nccl,
                  "bench": rehearse_bench, "tune": rehearse_tune}
    return {name: functools.partial(fn, stand_ins=stand_ins) for name, fn in rehearsals.items()}
