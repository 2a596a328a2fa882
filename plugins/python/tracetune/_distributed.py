"""torch.distributed collectives of non-NCCL process groups (gloo, mpi) as host-side
collectives in the trace (docs/python.md, "Collectives without NCCL").

NCCL's own collectives reach the trace through our NCCL profiler plugin; a CPU job's gloo
collectives have no such plugin, so without this the analyzer sees neither their time nor
which rank made the others wait. Each call of the module-level functions below, on a process
group whose backend is not NCCL, is written as the same records the plugin writes (a
communicator, then a host-side operation: record_format.h, NcclCommRecord / NcclCollRecord),
with the call's start and end, the group's size and this rank, the element count and type,
and a per-group sequence number. The communicator id hashes "c10d:<backend>:<group name>",
the same on every rank (groups are created in the same order everywhere, as torch requires),
so the analyzer matches the k-th all-reduce of a group across ranks and finds the last arriver.

Limits: a call with async_op=True is recorded as its enqueue (the call), not its completion;
collectives that DDP's reducer issues from C++ are not seen (they are not Python calls).
"""
import ctypes
import functools
import os
import zlib

from tracetune import _collector

_NCCL_COMM, _NCCL_COLL = 101, 102  # RecordType in record_format.h
_HOST_SIDE, _COLLECTIVE = 0, 0      # NcclSide::Host, NcclOpKind::Collective


class _CommRecord(ctypes.Structure):  # NcclCommRecord, 24 bytes
    _fields_ = [("comm_id", ctypes.c_uint64), ("rank", ctypes.c_int32), ("nranks", ctypes.c_int32),
                ("nnodes", ctypes.c_int32), ("name", ctypes.c_uint32)]


class _CollRecord(ctypes.Structure):  # NcclCollRecord, 80 bytes
    _fields_ = [("start_ns", ctypes.c_int64), ("end_ns", ctypes.c_int64), ("observed_ns", ctypes.c_int64),
                ("comm_id", ctypes.c_uint64), ("seq", ctypes.c_int64), ("count", ctypes.c_uint64),
                ("func", ctypes.c_uint32), ("dtype", ctypes.c_uint32), ("algo", ctypes.c_uint32),
                ("proto", ctypes.c_uint32), ("root", ctypes.c_int32), ("peer", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("channels", ctypes.c_uint8), ("warps", ctypes.c_uint8),
                ("side", ctypes.c_uint8), ("kind", ctypes.c_uint8)]


# function -> (NCCL's name for it, how to count its elements: the tensor NCCL would count)
_FUNCS = {
    "all_reduce": ("AllReduce", lambda a, kw: _arg(a, kw, 0, "tensor")),
    "broadcast": ("Broadcast", lambda a, kw: _arg(a, kw, 0, "tensor")),
    "reduce": ("Reduce", lambda a, kw: _arg(a, kw, 0, "tensor")),
    "all_gather": ("AllGather", lambda a, kw: _arg(a, kw, 1, "tensor")),
    "all_gather_into_tensor": ("AllGather", lambda a, kw: _arg(a, kw, 1, "input_tensor")),
    "_all_gather_base": ("AllGather", lambda a, kw: _arg(a, kw, 1, "input_tensor")),
    "reduce_scatter": ("ReduceScatter", lambda a, kw: _arg(a, kw, 0, "output")),
    "reduce_scatter_tensor": ("ReduceScatter", lambda a, kw: _arg(a, kw, 0, "output")),
    "all_to_all_single": ("AllToAll", lambda a, kw: _arg(a, kw, 1, "input")),
    "barrier": ("Barrier", lambda a, kw: None),
}
_ROOT_ARG = {"broadcast": (1, "src"), "reduce": (1, "dst")}

_NCCL_DTYPES = {"float32": "ncclFloat32", "float16": "ncclFloat16", "bfloat16": "ncclBfloat16",
                "float64": "ncclFloat64", "int64": "ncclInt64", "int32": "ncclInt32", "int8": "ncclInt8",
                "uint8": "ncclUint8"}

_state = {"comms": {}, "installed": False}  # comms: id(process group) -> its comm id, rank, seq


def _arg(args, kwargs, index, name):
    return args[index] if len(args) > index else kwargs.get(name)


def _backend(dist, group):
    try:
        return str(dist.get_backend(group)).lower() if dist.is_initialized() else None
    except Exception:  # an unknown group
        return None


def _group_name(c10d, pg):
    """The group's name, the same on every rank ("0" for the default group in torch 1.13)."""
    names = getattr(getattr(c10d, "_world", None), "pg_names", None) or getattr(c10d, "_pg_names", {})
    return str(names.get(pg, "default"))


def _comm(dist, group, backend):
    """(comm id, group rank, sequence number of this call) for `group`; the first call on a
    group writes its communicator record."""
    c10d = dist.distributed_c10d
    pg = group if group is not None else c10d._get_default_group()
    key = id(pg)
    comm = _state["comms"].get(key)
    if comm is None:
        name = f"c10d:{backend}:{_group_name(c10d, pg)}"
        comm_id = (zlib.crc32(name.encode()) << 32) | zlib.crc32(name[::-1].encode())
        rank, size = dist.get_rank(pg), dist.get_world_size(pg)
        _collector.emit_record(_NCCL_COMM, _CommRecord(comm_id=comm_id, rank=rank, nranks=size, nnodes=-1,
                                                       name=_collector.intern_string(name)))
        comm = _state["comms"][key] = {"id": comm_id, "rank": rank, "seq": 0}
    comm["seq"] += 1
    return comm["id"], comm["rank"], comm["seq"] - 1


# record --ring: each call also says when it starts, as a mark
# "tracetune.collective.enter <Func> comm=<id hex> seq=<n> bytes=<n>", so a rank stuck inside a
# collective shows in a dump (the completed call's record is written only when it returns).
_ENTRY_MARKS = os.environ.get("TRACETUNE_COLLECTIVE_ENTRY") == "1"


def _wrap(dist, fname, original):
    func, counted = _FUNCS[fname]

    @functools.wraps(original)
    def collective(*args, **kwargs):
        group = kwargs.get("group")
        backend = _backend(dist, group)
        if backend in (None, "nccl"):  # not set up (the call will say so), or NCCL: our plugin records it
            return original(*args, **kwargs)
        try:
            comm_id, rank, seq = _comm(dist, group, backend)
            tensor = counted(args, kwargs)
        except Exception:  # never break the job's collective over its record
            return original(*args, **kwargs)
        if _ENTRY_MARKS:
            try:
                nbytes = tensor.numel() * tensor.element_size() if tensor is not None else 0
            except Exception:  # not a tensor: the byte count is unknown
                nbytes = -1
            _collector.mark(f"tracetune.collective.enter {func} comm={comm_id:016x} seq={seq} bytes={nbytes}",
                            "tracetune")
        start = _collector.now_ns()
        result = original(*args, **kwargs)
        end = _collector.now_ns()
        if not _collector.window_open():  # its record would be refused (the sequence is counted above)
            return result
        try:
            dtype = _NCCL_DTYPES.get(str(getattr(tensor, "dtype", "")).replace("torch.", ""), "")
            root_at = _ROOT_ARG.get(fname)
            root = _arg(args, kwargs, *root_at) if root_at else -1
            _collector.emit_record(_NCCL_COLL, _CollRecord(
                start_ns=start, end_ns=end, comm_id=comm_id, seq=seq,
                count=tensor.numel() if tensor is not None else 0, func=_collector.intern_string(func),
                dtype=_collector.intern_string(dtype) if dtype else 0, root=int(root) if root is not None else -1,
                peer=-1, rank=rank, side=_HOST_SIDE, kind=_COLLECTIVE))
        except Exception:  # never break the job's collective over its record
            pass
        return result

    collective._tracetune_wrapped = True
    return collective


def install(dist):
    """Wrap torch.distributed's collectives (called when it is imported in a recorded process)."""
    if _state["installed"] or not _collector.available():
        return
    if ctypes.sizeof(_CommRecord) != 24 or ctypes.sizeof(_CollRecord) != 80:
        return  # an ABI we do not know: record nothing rather than garbage
    _state["installed"] = True
    # a fork child records into its own file: its communicator records must be written again
    os.register_at_fork(after_in_child=_state["comms"].clear)
    for fname in _FUNCS:
        original = getattr(dist, fname, None)
        if original is not None and not getattr(original, "_tracetune_wrapped", False):
            setattr(dist, fname, _wrap(dist, fname, original))
