"""Samplers: chains of the runtime's samplers (SamplerChain) and samplers written in Python (Sampler, the
Candidates it transforms, and the C interface a registered class is served through).
"""
import copy
import ctypes
import itertools
from ctypes import POINTER, byref, c_float, c_int32, c_void_p

from . import _capi
from ._capi import TokenData
from ._lifetime import _Owned
from .errors import SamplerError, _check


class SamplerChain(_Owned):
    """Samplers applied in order, the last selecting: SamplerChain(runtime, "top_k:40;top_p:0.9;temp:0.7;dist").
    It keeps its runtime alive."""

    def __init__(self, runtime, spec="greedy", _handle=None):
        self._lib = _capi.lib()
        self._runtime = runtime
        if _handle is None:
            _handle = c_void_p()
            _check(self._lib.basalt_sampler_chain_create(runtime._h, spec.encode(), byref(_handle)))
        self._own(_handle, self._lib.basalt_sampler_chain_destroy, [runtime])
        self.spec = spec

    def __len__(self):
        return self._lib.basalt_sampler_chain_length(self._h)

    @property
    def names(self):
        """The sampler names, in order."""
        return [self._lib.basalt_sampler_chain_name(self._h, i).decode() for i in range(len(self))]

    def _sample_ptr(self, ptr, n):
        token = c_int32()
        _check(self._lib.basalt_sampler_chain_sample(self._h, ptr, n, byref(token)))
        return token.value

    def sample(self, logits):
        """Picks a token from logits (a sequence of floats or a float memoryview) and accepts it."""
        n = len(logits)
        if isinstance(logits, memoryview) and logits.format == "f" and logits.contiguous:
            arr = (c_float * n).from_buffer_copy(logits)
        else:
            arr = (c_float * n)(*logits)
        return self._sample_ptr(arr, n)

    def accept(self, token):
        """Tells every sampler that `token` was chosen (e.g. prompt tokens for penalties)."""
        _check(self._lib.basalt_sampler_chain_accept(self._h, token))

    def reset(self):
        """Forgets every sampler's per-sequence state."""
        _check(self._lib.basalt_sampler_chain_reset(self._h))

    def clone(self):
        """A deep copy, state included."""
        handle = c_void_p()
        _check(self._lib.basalt_sampler_chain_clone(self._h, byref(handle)))
        return SamplerChain(self._runtime, self.spec, _handle=handle)


class Candidates:
    """The candidate array a Python sampler transforms (borrowed for the apply call only). Entries are TokenData
    structs (id, logit, p) read and written in place; the sampler may shrink size, reorder, and set selected."""

    def __init__(self, ptr):
        self._c = ptr.contents

    def __len__(self):
        return self._c.size

    @property
    def seq_id(self):
        return self._c.seq_id

    @property
    def size(self):
        return self._c.size

    @size.setter
    def size(self, n):
        if not 0 <= n <= self._c.size:
            raise ValueError(f"candidates can only shrink: size {n} > {self._c.size}")
        self._c.size = n

    @property
    def selected(self):
        """Index of the chosen entry, -1 when none."""
        return self._c.selected

    @selected.setter
    def selected(self, i):
        self._c.selected = i

    @property
    def sorted(self):
        return bool(self._c.sorted)

    @sorted.setter
    def sorted(self, v):
        self._c.sorted = 1 if v else 0

    @property
    def probs_valid(self):
        return bool(self._c.probs_valid)

    @probs_valid.setter
    def probs_valid(self, v):
        self._c.probs_valid = 1 if v else 0

    def data(self):
        """The live entries as a ctypes array of TokenData (writable views into the candidate array)."""
        n = self._c.size
        if n == 0:
            return (TokenData * 0)()
        return ctypes.cast(self._c.data, POINTER(TokenData * n)).contents

    def __getitem__(self, i):
        return self.data()[i]

    def entries(self):
        """The live entries as a list of (id, logit, p) tuples."""
        return [(d.id, d.logit, d.p) for d in self.data()]

    def assign(self, entries):
        """Writes (id, logit, p) tuples to the front of the array and sets size to their count (never more)."""
        entries = list(entries)
        if len(entries) > self._c.size:
            raise ValueError(f"candidates can only shrink: {len(entries)} entries > size {self._c.size}")
        data = self.data()
        for i, (tid, logit, p) in enumerate(entries):
            data[i].id, data[i].logit, data[i].p = tid, logit, p
        self._c.size = len(entries)


class Sampler:
    """Base class of samplers written in Python; one object per sequence.

    Subclasses implement __init__(self, params) (params: dict of str keys and values from the chain, e.g.
    {"k": "40"}; raise SamplerError or ValueError for a bad one) and apply(self, candidates). Optional: accept(token),
    reset(), clone() (default: copy.deepcopy). `flags` combines SAMPLER_SELECTS (sets candidates.selected),
    SAMPLER_ARGMAX_INVARIANT and SAMPLER_DRAFT_SAFE. Register with Runtime.register_sampler(name, cls)."""
    flags = 0

    def __init__(self, params):
        if params:
            raise SamplerError(f"unknown parameter '{next(iter(params))}' (accepted: none)")

    def apply(self, candidates):
        raise NotImplementedError

    def accept(self, token):
        pass

    def reset(self):
        pass

    def clone(self):
        return copy.deepcopy(self)


class _SamplerRegistration:
    """The basalt_sampler_iface of one Python sampler class: ctypes callbacks over a table of live objects.
    Instances cross the ABI as small integer handles (never 0). Every callback catches: an exception becomes a
    status and a message through host->set_error."""

    def __init__(self, name, cls, flags):
        self.name = name
        self.cls = cls
        self.objects = {}
        self.handles = itertools.count(1)
        self.host = None
        self.iface = _capi.SamplerIface()
        self.iface.struct_size = ctypes.sizeof(_capi.SamplerIface)
        self.iface.flags = flags
        # the callbacks are attributes of this object, which the Runtime keeps: they cannot be collected
        self.iface.create = self._create_fn = _capi.SamplerCreateFn(self._create)
        self.iface.destroy = self._destroy_fn = _capi.SamplerDestroyFn(self._destroy)
        self.iface.apply = self._apply_fn = _capi.SamplerApplyFn(self._apply)
        self.iface.accept = self._accept_fn = _capi.SamplerAcceptFn(self._accept)
        self.iface.reset = self._reset_fn = _capi.SamplerResetFn(self._reset)
        self.iface.clone = self._clone_fn = _capi.SamplerCloneFn(self._clone)

    def _fail(self, e):
        if isinstance(e, SamplerError):
            status, msg = e.status, str(e)
        elif isinstance(e, ValueError):
            status, msg = _capi.ERR_INVALID_ARGUMENT, str(e)
        elif isinstance(e, MemoryError):
            status, msg = _capi.ERR_OUT_OF_MEMORY, "out of memory"
        else:
            status, msg = _capi.ERR_INTERNAL, f"{type(e).__name__}: {e}"
        if self.host is not None:
            self.host.set_error(self.host.ctx, status, msg.encode("utf-8", "replace"))
        return status

    def _add(self, obj):
        h = next(self.handles)
        self.objects[h] = obj
        return h

    def _create(self, host, params, out):
        try:
            if host:
                self.host = host.contents
            kv = {}
            if params:
                p = params.contents
                for i in range(p.count):
                    kv[p.keys[i].decode("utf-8", "replace")] = p.values[i].decode("utf-8", "replace")
            out[0] = self._add(self.cls(kv))
            return _capi.OK
        except BaseException as e:  # noqa: B902 -- nothing may propagate into C
            return self._fail(e)

    def _destroy(self, handle):
        self.objects.pop(handle, None)

    def _apply(self, instances, candidates, n):
        try:
            for i in range(n):
                self.objects[instances[i]].apply(Candidates(candidates[i]))
            return _capi.OK
        except BaseException as e:  # noqa: B902
            return self._fail(e)

    def _accept(self, handle, token):
        try:
            self.objects[handle].accept(token)
            return _capi.OK
        except BaseException as e:  # noqa: B902
            return self._fail(e)

    def _reset(self, handle):
        try:
            self.objects[handle].reset()
            return _capi.OK
        except BaseException as e:  # noqa: B902
            return self._fail(e)

    def _clone(self, handle, out):
        try:
            out[0] = self._add(self.objects[handle].clone())
            return _capi.OK
        except BaseException as e:  # noqa: B902
            return self._fail(e)
