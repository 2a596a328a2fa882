"""Step boundaries for unmodified PyTorch jobs.

Installed by sitecustomize under `tracetune record`. Nothing is imported eagerly: an import
hook patches torch's classes when the job imports them.

- DataLoader iteration (main thread): each `next(iterator)` call is a "waiting for the next
  batch" span, and the start of each fetch begins a new step; the step in progress ends when
  the next fetch starts (or the iterator is exhausted).
- `torch.optim` optimizers: each `step()` call becomes an "optimizer.step" span, and its end
  is a step boundary (a job that feeds its own tensors still gets steps); with several
  optimizers (a GAN's two), only the first one that steps marks steps.
- `torch.autograd.backward` (what `loss.backward()` calls), main thread: where no optimizer
  steps (hand-written updates), the end of each backward is a step boundary.
- `torch.profiler.profile.step()` and `tracetune.step()` also mark step boundaries. The
  sources rank explicit > profiler > DataLoader > optimizer > backward: once a higher one is
  used, lower ones stop marking steps (their spans are still recorded).
- TRACETUNE_MAX_STEPS=N (set by `tracetune tune` for its trials, or `tracetune record
  --max-steps N`): once N steps have completed, the process raises SystemExit(0) at the next
  step boundary, so the job ends normally (finally blocks run, DataLoader workers are shut
  down) with exit status 0.
- Epochs: each `iter(loader)` on the main thread is a range "tracetune.epoch <JSON>" over the
  call (where a loader without persistent workers forks them), numbered from 0 with the
  loader's workers and persistence; the analysis reads epoch starts and lengths from them.
- TRACETUNE_EARLY_STOP=FROM:COUNT:NS (set by `tracetune tune` for search trials): when steps
  FROM..FROM+COUNT-1 have completed and their median is above NS nanoseconds, the job ends the
  same way: the trial is already clearly slower than the best so far.
"""
import json
import os
import sys
import threading

from tracetune import _collector, _distributed, _imphook, _memory, _shapes

_EXPLICIT, _PROFILER, _DATALOADER, _OPTIMIZER, _BACKWARD = 5, 4, 3, 2, 1


DURATIONS = []  # ns of the completed steps TRACETUNE_EARLY_STOP judges (and one more), in order


def end_step(start: int, now: int, number: int) -> None:
    """A step [start, now) ends: its record and the RSS (one collector call, always: it moves the
    recording window), the CUDA allocator's counters (only when the window was open during the
    step: they are read at a cost and would be refused), op shapes in the first steps, and its
    duration for TRACETUNE_EARLY_STOP."""
    in_window = _collector.window_open()  # before the record: the step that opens a window stays out
    _collector.step_end(_collector.STEP, start, now, number)
    if in_window:
        _memory.sample_cuda(now)
    _shapes.on_step_end(now)
    # only as many as the judgement needs: stop_if_done judges once, when the count reaches
    # FROM + COUNT; one more step takes it past, and a long job's list grows no further
    if EARLY_STOP and len(DURATIONS) <= EARLY_STOP[0] + EARLY_STOP[1]:
        DURATIONS.append(now - start)


class _Steps:
    def __init__(self):
        self.source = 0       # the highest source seen so far
        self.number = 0
        self.start = None     # start of the step in progress
        self.lock = threading.Lock()

    def boundary(self, source: int, now: int) -> None:
        """A step boundary from `source` at time `now`."""
        with self.lock:
            if source < self.source:
                return
            if source > self.source:  # a better source takes over; restart numbering
                self.source, self.start, self.number = source, None, 0
                DURATIONS.clear()
            if self.start is not None:
                end_step(self.start, now, self.number)
                self.number += 1
            self.start = now

    def finish(self, source: int, now: int) -> None:
        """End the step in progress without starting another (iterator exhausted)."""
        with self.lock:
            if source == self.source and self.start is not None:
                end_step(self.start, now, self.number)
                self.number += 1
                self.start = None


STEPS = _Steps()


def _read_max_steps() -> int:
    try:
        return max(0, int(os.environ.get("TRACETUNE_MAX_STEPS", "0") or "0"))
    except ValueError:
        sys.stderr.write("tracetune: TRACETUNE_MAX_STEPS is not an integer; ignored\n")
        return 0


MAX_STEPS = _read_max_steps()


def _read_early_stop():
    spec = os.environ.get("TRACETUNE_EARLY_STOP", "")
    if not spec:
        return None
    try:
        first, count, slower_than = (int(x) for x in spec.split(":"))
        if first >= 0 and count > 0 and slower_than > 0:
            return first, count, slower_than
    except ValueError:
        pass
    sys.stderr.write("tracetune: TRACETUNE_EARLY_STOP is not FROM:COUNT:NS; ignored\n")
    return None


EARLY_STOP = _read_early_stop()


def stop_if_done(completed: int) -> None:
    """Ends the job once TRACETUNE_MAX_STEPS steps have completed, or early when the steps
    TRACETUNE_EARLY_STOP judges are too slow (called at a step boundary, outside any lock)."""
    if MAX_STEPS and completed >= MAX_STEPS:
        sys.stderr.write(f"tracetune: stopping after {completed} steps (TRACETUNE_MAX_STEPS={MAX_STEPS})\n")
        sys.stderr.flush()
        raise SystemExit(0)
    if EARLY_STOP and len(DURATIONS) == EARLY_STOP[0] + EARLY_STOP[1]:
        window = sorted(DURATIONS[EARLY_STOP[0]:])
        median = window[len(window) // 2]
        if median > EARLY_STOP[2]:
            sys.stderr.write(f"tracetune: stopping early after {completed} steps: median {median / 1e6:.1f} ms > "
                             f"{EARLY_STOP[2] / 1e6:.1f} ms (TRACETUNE_EARLY_STOP)\n")
            sys.stderr.flush()
            raise SystemExit(0)


def explicit_steps_in_use() -> None:
    if STEPS.source < _EXPLICIT:
        DURATIONS.clear()  # the DataLoader's steps so far are not the job's explicit ones
    STEPS.source = max(STEPS.source, _EXPLICIT)


def _patch_dataloader(module) -> None:
    it_cls = getattr(module, "_BaseDataLoaderIter", None)
    if it_cls is None or getattr(it_cls, "_tracetune_patched", False):
        return
    original = it_cls.__next__
    main = threading.main_thread

    def __next__(self):
        if threading.current_thread() is not main():
            return original(self)
        t0 = _collector.now_ns()
        try:
            batch = original(self)
        except StopIteration:
            STEPS.finish(_DATALOADER, t0)
            raise
        t1 = _collector.now_ns()
        STEPS.boundary(_DATALOADER, t0)
        _collector.step(_collector.BATCH_WAIT, t0, t1, STEPS.number)
        if STEPS.source == _DATALOADER:
            stop_if_done(STEPS.number)
        return batch

    it_cls.__next__ = __next__
    it_cls._tracetune_patched = True
    _patch_epochs(getattr(module, "DataLoader", None))


EPOCHS = [0]  # DataLoader iterations started on the main thread (the epoch marks' numbering)


def epoch_mark(loader) -> str:
    """The name of an epoch's range: "tracetune.epoch <JSON>" with the epoch's number (from 0,
    over every DataLoader the main thread iterates), the loader's workers, whether they are
    kept alive between epochs, the batches each worker loads ahead (prefetch: the loader's
    prefetch_factor, PyTorch's 2 when it leaves it unset; 0 without workers) and the process's
    intra-op threads (threads: torch.get_num_threads() at the epoch's start). `tune` offers
    no value equal to the job's own (tracetune/tuner/search.h, MachineLimits::job_values)."""
    workers = int(getattr(loader, "num_workers", 0) or 0)
    persistent = bool(getattr(loader, "persistent_workers", False)) and workers > 0
    prefetch = int(getattr(loader, "prefetch_factor", None) or 2) if workers > 0 else 0
    torch = sys.modules.get("torch")
    threads = int(torch.get_num_threads()) if torch is not None and hasattr(torch, "get_num_threads") else 0
    return "tracetune.epoch " + json.dumps({"epoch": EPOCHS[0], "workers": workers, "persistent": persistent,
                                            "prefetch": prefetch, "threads": threads}, sort_keys=True)


def _patch_epochs(loader_cls) -> None:
    """Each `iter(loader)` on the main thread (an epoch's start: workers are forked here unless
    they are kept alive) becomes a range "tracetune.epoch <JSON>" over the call; the steps up to
    the next one are the epoch's."""
    if loader_cls is None or getattr(loader_cls, "_tracetune_epochs", False):
        return
    original = loader_cls.__iter__
    main = threading.main_thread

    def __iter__(self):
        if threading.current_thread() is not main():
            return original(self)
        t0 = _collector.now_ns()
        it = original(self)
        _collector.range(epoch_mark(self), "tracetune", t0, _collector.now_ns())
        EPOCHS[0] += 1
        return it

    loader_cls.__iter__ = __iter__
    loader_cls._tracetune_epochs = True


def _low_source_boundary(source: int, now: int) -> None:
    """A boundary from the optimizer or backward source, and the trial's stop when it counts."""
    STEPS.boundary(source, now)
    if STEPS.source == source:
        stop_if_done(STEPS.number)


_step_clock = []  # the optimizer whose step() marks steps: the first one that stepped


def _record_optimizer(optimizer) -> None:
    """The training optimizer's configuration, once, as a mark "tracetune.optimizer <JSON>":
    `tune --kernels` benchmarks and parity-checks the optimizer substitutions on it."""
    try:
        import json
        from tracetune import _fused_optim
        _collector.mark("tracetune.optimizer " + json.dumps(_fused_optim.describe(optimizer), sort_keys=True), "tracetune")
    except Exception:  # noqa: BLE001  (never break the job)
        pass


def _optimizer_step_ended(optimizer, now: int) -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    if not _step_clock:
        _step_clock.append(id(optimizer))
        _record_optimizer(optimizer)
    if _step_clock[0] == id(optimizer):
        _low_source_boundary(_OPTIMIZER, now)


def _wrap_optimizer_step(cls) -> None:
    step = cls.__dict__.get("step")
    if step is None or getattr(step, "_tracetune_wrapped", False):
        return

    def wrapped(self, *args, **kwargs):
        t0 = _collector.now_ns()
        try:
            result = step(self, *args, **kwargs)
        finally:
            t1 = _collector.now_ns()
            _collector.step(_collector.OPTIMIZER_STEP, t0, t1, STEPS.number)
        _optimizer_step_ended(self, t1)
        return result

    wrapped._tracetune_wrapped = True
    wrapped.__wrapped__ = step
    wrapped.__name__, wrapped.__qualname__, wrapped.__doc__ = step.__name__, step.__qualname__, step.__doc__
    cls.step = wrapped


def _patch_optim(module) -> None:
    base = getattr(module, "Optimizer", None)
    if base is None:
        return
    pending = [base]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls is not base:
            _wrap_optimizer_step(cls)
    # optimizers defined later (user code, torch submodules imported afterwards)
    original_init_subclass = base.__dict__.get("__init_subclass__")

    @classmethod
    def __init_subclass__(cls, **kwargs):
        if original_init_subclass is not None:
            original_init_subclass.__func__(cls, **kwargs)
        else:
            super(base, cls).__init_subclass__(**kwargs)
        _wrap_optimizer_step(cls)

    base.__init_subclass__ = __init_subclass__


def _patch_profiler(module) -> None:
    prof = getattr(module, "profile", None)
    if prof is None or getattr(prof, "_tracetune_patched", False):
        return
    original = prof.step

    def step(self, *args, **kwargs):
        STEPS.boundary(_PROFILER, _collector.now_ns())
        if STEPS.source == _PROFILER:
            stop_if_done(STEPS.number)
        return original(self, *args, **kwargs)

    prof.step = step
    prof._tracetune_patched = True


def _patch_autograd(module) -> None:
    original = getattr(module, "backward", None)
    if original is None or getattr(original, "_tracetune_wrapped", False):
        return

    def backward(*args, **kwargs):
        if not _shapes.is_compiling() and _shapes.sampling():  # Dynamo sees no read of the sampling state
            _shapes.count_graph(args[0] if args else kwargs.get("tensors"))
        result = original(*args, **kwargs)
        if threading.current_thread() is threading.main_thread():
            _low_source_boundary(_BACKWARD, _collector.now_ns())
        return result

    backward._tracetune_wrapped = True
    backward.__wrapped__ = original
    backward.__name__, backward.__qualname__, backward.__doc__ = original.__name__, original.__qualname__, original.__doc__
    module.backward = backward


def _patch_tensor_backward_loss(torch) -> None:
    """TRACETUNE_RECORD_LOSS=1 (set by `tracetune tune --kernels` for every trial): the value
    of each scalar tensor the job calls backward() on (its loss) becomes a `tracetune.loss`
    counter, so the tuner can compare the loss of a substitution's trial with the baseline's.
    Reading the value synchronises a GPU stream once per step, in every trial alike."""
    cls = torch.Tensor
    original = cls.backward
    if getattr(original, "_tracetune_wrapped", False):
        return

    def backward(self, *args, **kwargs):
        if self.dim() == 0 and self.requires_grad:
            try:
                _collector.counter("tracetune.loss", float(self.detach()))
            except Exception:  # never break the job
                pass
        return original(self, *args, **kwargs)

    backward._tracetune_wrapped = True
    cls.backward = backward


_PATCHES = {
    "torch.utils.data.dataloader": _patch_dataloader,
    "torch.optim.optimizer": lambda m: None,  # patched via torch.optim, after all optimizers load
    "torch.optim": _patch_optim,
    "torch.profiler.profiler": _patch_profiler,
    "torch.autograd": _patch_autograd,
}


_installed = False


def install() -> None:
    global _installed
    if _installed or not _collector.available():
        return
    _installed = True
    for name, patch in _PATCHES.items():
        _imphook.on_import(name, patch)
    _imphook.on_import("torch", _shapes.install)
    _imphook.on_import("torch.distributed", _distributed.install)
    if os.environ.get("TRACETUNE_RECORD_LOSS") == "1":
        _imphook.on_import("torch", _patch_tensor_backward_loss)
