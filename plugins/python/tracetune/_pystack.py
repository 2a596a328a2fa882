"""Python stack sampling (`tracetune record --trace pystack`, on by default).

A daemon thread in every recorded Python process reads every other thread's stack
(sys._current_frames()) at a fixed rate, TRACETUNE_PYSTACK_HZ times a second (default 100,
1..1000), and hands them to the collector in one call per tick (tracetune_py_samples): one
PySample record per thread, its frames as per-process ids. Each (code object, line) is defined
once per process (tracetune_py_frame: function, file, line). No ptrace, no signal: the job is
never stopped; the sampler only needs the GIL, like any other thread.

- Fork children (DataLoader workers started by fork) restart the sampler after the fork
  (os.register_at_fork) with an empty frame table: their record file is their own. Spawned
  processes run sitecustomize and start their own.
- GIL bias: a tick runs when the sampler holds the GIL, and then every other thread is at a
  point where it released it or was made to. A thread inside a C call that releases the GIL (a
  PyTorch op, a read, a sleep) shows the Python line that made the call, which is where its time
  goes from Python's point of view; a thread running pure Python is seen at its next switch
  (at most sys.getswitchinterval(), 5 ms, late).
- Threads that Python's threading module does not know (started by C code that never asked for
  threading.current_thread()) have no known kernel thread id and are not sampled.
"""
import _thread
import array
import ctypes
import os
import sys
import threading
import time

from tracetune import _collector

DEFAULT_HZ = 100
MAX_DEPTH = 1024  # deeper stacks keep their innermost frames (kMaxPyStackDepth)


def read_rate() -> int:
    text = os.environ.get("TRACETUNE_PYSTACK_HZ", "")
    if not text:
        return DEFAULT_HZ
    try:
        hz = int(text)
        if 1 <= hz <= 1000:
            return hz
    except ValueError:
        pass
    sys.stderr.write(f"tracetune: TRACETUNE_PYSTACK_HZ={text!r} is not an integer in 1..1000; using {DEFAULT_HZ}\n")
    return DEFAULT_HZ


class Sampler:
    """One process's sampler: its frame table and its thread."""

    def __init__(self, lib, hz: int):
        self._lib = lib
        self.hz = hz
        self._interval = 1.0 / hz
        self._frames = {}   # (code object, line) -> frame id (the code object is kept alive: ids stay unique)
        self._natives = {}  # threading ident -> kernel thread id
        self._stopped = False
        self.ident = None   # the sampler thread's, once it runs

    def start(self) -> None:
        """Starts the thread and returns once it runs Python code.

        A bare _thread, not a threading.Thread: the job's threading.enumerate() and
        active_count() do not see it (a job waiting for active_count() == 1 still ends), and
        like a daemon thread it never holds up the interpreter's exit. Like threading.Thread's
        start(), it waits until the thread runs: a thread still starting when the interpreter
        finalizes crashes CPython (3.11: SIGSEGV in _PyThreadState_SetCurrent, about 1 short
        job in 400 on a busy machine); one already running Python code is stopped cleanly."""
        running = _thread.allocate_lock()
        running.acquire()
        _thread.start_new_thread(self._run, (running,))
        running.acquire()  # released by the thread (this wait lets it take the GIL)

    def stop(self) -> None:
        self._stopped = True

    def _run(self, running) -> None:
        me = self.ident = threading.get_ident()
        running.release()
        deadline = time.monotonic()
        while not self._stopped:
            deadline += self._interval
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:  # behind (a long GIL hold): no burst of catch-up ticks
                deadline = time.monotonic()
            try:
                self.tick(me)
            except Exception:  # never break the job: stop sampling this process
                return

    def _native_id(self, ident: int):
        tid = self._natives.get(ident)
        if tid is None:
            self._natives = {t.ident: t.native_id for t in threading.enumerate() if t.native_id is not None}
            tid = self._natives.get(ident)
        return tid

    def _define(self, code, line: int) -> int:
        fid = len(self._frames) + 1
        self._frames[(code, line)] = fid
        name = getattr(code, "co_qualname", code.co_name)
        self._lib.tracetune_py_frame(fid, name.encode("utf-8", "replace"),
                                     code.co_filename.encode("utf-8", "replace"), line if line is not None else -1)
        return fid

    def tick(self, skip_ident: int) -> None:
        """Samples every thread but `skip_ident` once (one collector call); nothing while the
        recording window is closed (the samples would be refused)."""
        if not _collector.window_open():
            return
        stacks = sys._current_frames()
        ts = time.monotonic_ns()
        words = array.array("I")
        frames = self._frames
        for ident, frame in stacks.items():
            if ident == skip_ident:
                continue
            tid = self._native_id(ident)
            if tid is None:
                continue
            at = len(words)
            words.append(tid)
            words.append(0)
            depth = 0
            while frame is not None and depth < MAX_DEPTH:
                code, line = frame.f_code, frame.f_lineno
                fid = frames.get((code, line))
                if fid is None:
                    fid = self._define(code, line)
                words.append(fid)
                depth += 1
                frame = frame.f_back
            words[at + 1] = depth
        stacks = frame = None  # no frame outlives the tick
        if words:
            address, count = words.buffer_info()
            self._lib.tracetune_py_samples(ts, address, count)


_SAMPLER = None


def _bind(lib) -> None:
    lib.tracetune_py_frame.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32]
    lib.tracetune_py_frame.restype = None
    lib.tracetune_py_samples.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint32]
    lib.tracetune_py_samples.restype = None


def _start_in_child() -> None:
    global _SAMPLER
    _SAMPLER = Sampler(_SAMPLER._lib, _SAMPLER.hz)  # the parent's thread is gone
    _SAMPLER.start()


def start() -> bool:
    """Starts this process's sampler (once); False when not recording."""
    global _SAMPLER
    if _SAMPLER is not None or not _collector.available():
        return False
    lib = _collector._lib
    _bind(lib)
    _SAMPLER = Sampler(lib, read_rate())
    _SAMPLER.start()
    os.register_at_fork(after_in_child=_start_in_child)
    return True
