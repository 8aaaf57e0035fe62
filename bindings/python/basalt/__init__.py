"""Basalt from Python: a thin ctypes layer over the public C API (libbasalt), standard library only.

    import basalt
    print(basalt.generate("model.gguf", "Once upon a time", 32, samplers="top_k:40;temp:0.7;dist:seed=1"))

    rt = basalt.Runtime()
    model = basalt.Model("model.gguf", rt)
    session = basalt.Session(rt, model)
    session.decode(model.tokenize("Hello"))
    row = session.logits()                    # a list of n_vocab floats (logits_view(): a memoryview, no copy)

Samplers written in Python subclass basalt.Sampler and are registered on a runtime
(Runtime.register_sampler); they are then used in chains exactly like the plugins' samplers.
libbasalt is found through $BASALT_LIBRARY, else relative to this package (see _capi.find_library).
"""
import copy
import ctypes
import itertools
from ctypes import POINTER, byref, c_char_p, c_float, c_int8, c_int32, c_size_t, c_uint32, c_void_p

from . import _capi
from ._capi import (SAMPLER_ARGMAX_INVARIANT, SAMPLER_DRAFT_SAFE, SAMPLER_SELECTS, TokenData)

__all__ = [
    "BasaltError", "Runtime", "Model", "Session", "SamplerChain", "Sampler", "SamplerError", "Candidates",
    "generate", "generate_tokens", "version", "library_path", "SAMPLER_ARGMAX_INVARIANT", "SAMPLER_DRAFT_SAFE",
    "SAMPLER_SELECTS", "TokenData"
]


class BasaltError(Exception):
    """A failed Basalt call: .status is the basalt_status code, .status_name its name, str() the message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.status_name = _capi.lib().basalt_status_name(status).decode()


def _check(status):
    if status != _capi.OK:
        raise BasaltError(status, _capi.lib().basalt_last_error().decode("utf-8", "replace"))


def version():
    """The library version, e.g. "0.1.0"."""
    return _capi.lib().basalt_version_string().decode()


def library_path():
    """The path libbasalt was loaded from."""
    return _capi.lib().basalt_library_path


def _str(s):
    return s.decode("utf-8", "replace") if s is not None else None


# ---- runtime -------------------------------------------------------------------------------------------------------


class _Owned:
    """A C object this wrapper owns: close() frees it once through the C function named by _free (also on
    `with` exit and garbage collection). Runtime.close() unloads the plugins: every model, session and chain
    made from the runtime must be closed first."""

    _free = None
    _handle = None

    def close(self):
        if self._handle:
            getattr(self._lib, self._free)(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Runtime(_Owned):
    """The loaded plugins (discovered beside libbasalt and in $BASALT_PLUGIN_PATH unless disabled) plus the
    samplers registered from Python. Everything created from a runtime keeps it alive."""

    _free = "basalt_runtime_destroy"

    def __init__(self, plugins=(), default_plugins=True, env_plugins=True):
        self._lib = _capi.lib()
        self._handle = None
        self._registrations = []  # keeps the ctypes callbacks of registered samplers alive
        params = _capi.RuntimeParams(ctypes.sizeof(_capi.RuntimeParams), 0)
        if not default_plugins:
            params.flags |= _capi.RUNTIME_NO_DEFAULT_PLUGINS
        if not env_plugins:
            params.flags |= _capi.RUNTIME_NO_ENV_PLUGINS
        handle = c_void_p()
        _check(self._lib.basalt_runtime_create(byref(params), byref(handle)))
        self._handle = handle
        for path in plugins:
            self.load_plugin(path)

    def load_plugin(self, path):
        """Loads one plugin library (its components become available); raises BasaltError naming the file."""
        _check(self._lib.basalt_runtime_load_plugin(self._handle, str(path).encode()))

    def components(self):
        """Every loaded component as a dict: kind, name, description, version, plugin, file."""
        out = []
        kinds = {1: "backend", 2: "kv_cache", 3: "sampler", 4: "decoder", 5: "steering"}
        for i in range(self._lib.basalt_runtime_component_count(self._handle)):
            info = _capi.ComponentInfo()
            info.struct_size = ctypes.sizeof(info)
            _check(self._lib.basalt_runtime_component_info(self._handle, i, byref(info)))
            out.append({
                "kind": kinds.get(info.kind, str(info.kind)),
                "name": _str(info.name),
                "description": _str(info.description),
                "version": (info.version_major, info.version_minor, info.version_patch),
                "plugin": _str(info.plugin_name),
                "file": _str(info.file),
            })
        return out

    def samplers(self):
        """Names of the samplers available to chains."""
        return [c["name"] for c in self.components() if c["kind"] == "sampler"]

    def register_sampler(self, name, sampler_class, flags=None):
        """Registers a sampler written in Python under `name` (see Sampler). flags defaults to
        sampler_class.flags. Raises BasaltError (status ERR_DUPLICATE) when a sampler of that name exists."""
        reg = _SamplerRegistration(name, sampler_class, sampler_class.flags if flags is None else flags)
        _check(self._lib.basalt_runtime_register_sampler(self._handle, name.encode(), byref(reg.iface)))
        self._registrations.append(reg)



# ---- models --------------------------------------------------------------------------------------------------------


class Model(_Owned):
    """A GGUF model file: hyper-parameters and tokenizer."""

    _free = "basalt_model_free"

    def __init__(self, path, runtime=None):
        self._lib = _capi.lib()
        self._handle = None
        self._runtime = runtime
        handle = c_void_p()
        _check(self._lib.basalt_model_load(runtime._handle if runtime else None, str(path).encode(), None,
                                           byref(handle)))
        self._handle = handle
        info = _capi.ModelInfo()
        info.struct_size = ctypes.sizeof(info)
        _check(self._lib.basalt_model_describe(self._handle, byref(info)))
        self.arch = _str(info.arch)
        self.name = _str(info.name)
        self.n_vocab = info.n_vocab
        self.n_ctx_train = info.n_ctx_train
        self.n_layer = info.n_layer
        self.n_embd = info.n_embd

    def tokenize(self, text, add_special=True, parse_special=False):
        """The token ids of `text` (str or UTF-8 bytes)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        flags = (_capi.TOKENIZE_ADD_SPECIAL if add_special else 0) | (_capi.TOKENIZE_PARSE_SPECIAL
                                                                       if parse_special else 0)
        count = c_size_t()
        st = self._lib.basalt_tokenize(self._handle, data, len(data), flags, None, 0, byref(count))
        if st not in (_capi.OK, _capi.ERR_CAPACITY):
            _check(st)
        if count.value == 0:
            return []
        buf = (c_int32 * count.value)()
        _check(self._lib.basalt_tokenize(self._handle, data, len(data), flags, buf, count.value, byref(count)))
        return list(buf[:count.value])

    def _text(self, call):
        """Runs a "write text into (buf, capacity, &len)" call, growing the buffer once if it is too small."""
        n = c_size_t()
        buf = ctypes.create_string_buffer(256)
        st = call(buf, len(buf), byref(n))
        if st == _capi.ERR_CAPACITY:
            buf = ctypes.create_string_buffer(n.value + 1)
            st = call(buf, len(buf), byref(n))
        _check(st)
        return buf.raw[:n.value]

    def detokenize_bytes(self, tokens, remove_special=False, unparse_special=False):
        """The UTF-8 bytes of `tokens` (a token may end inside a multi-byte character)."""
        ids = (c_int32 * len(tokens))(*tokens)
        flags = (_capi.DETOKENIZE_REMOVE_SPECIAL if remove_special else 0) | (_capi.DETOKENIZE_UNPARSE_SPECIAL
                                                                               if unparse_special else 0)
        return self._text(lambda b, cap, n: self._lib.basalt_detokenize(self._handle, ids, len(tokens), flags, b,
                                                                          cap, n))

    def detokenize(self, tokens, remove_special=False, unparse_special=False):
        """The text of `tokens` (invalid UTF-8 replaced)."""
        return self.detokenize_bytes(tokens, remove_special, unparse_special).decode("utf-8", "replace")

    def token_to_piece_bytes(self, token, special=False):
        """The UTF-8 bytes of one token."""
        return self._text(lambda b, cap, n: self._lib.basalt_token_to_piece(self._handle, token, int(special), b,
                                                                              cap, n))

    def token_to_piece(self, token, special=False):
        """The text of one token (invalid UTF-8 replaced; join token_to_piece_bytes for exact text)."""
        return self.token_to_piece_bytes(token, special).decode("utf-8", "replace")

    def is_eog(self, token):
        """True when `token` ends generation (EOS, EOT, ...)."""
        return self._lib.basalt_token_is_eog(self._handle, token) != 0

    def special_tokens(self):
        """The vocabulary's special tokens as a dict (-1 when absent)."""
        s = _capi.SpecialTokens()
        s.struct_size = ctypes.sizeof(s)
        _check(self._lib.basalt_model_special_tokens(self._handle, byref(s)))
        return {name: getattr(s, name) for name, _ in _capi.SpecialTokens._fields_[1:]}



# ---- sessions ------------------------------------------------------------------------------------------------------


def _params(d, keep):
    """A basalt_params over the str items of dict d; keep holds the buffers it points into."""
    keys = (c_char_p * len(d))(*[str(k).encode() for k in d])
    values = (c_char_p * len(d))(*[str(v).encode() for v in d.values()])
    keep.extend([keys, values])
    prm = _capi.Params()
    prm.struct_size = ctypes.sizeof(prm)
    prm.count = len(d)
    prm.keys = ctypes.cast(keys, ctypes.POINTER(c_char_p))
    prm.values = ctypes.cast(values, ctypes.POINTER(c_char_p))
    keep.append(prm)
    return prm


class Session(_Owned):
    """A model on a backend with a KV cache, decoding batches of sequences."""

    _free = "basalt_session_free"

    def __init__(self, runtime, model, n_ctx=0, n_batch=0, n_seq_max=0, n_threads=0, backend=None, kv_cache=None,
                 device=None, backend_params=None, kv_params=None):
        """device: the backend's device index (None: its default); backend_params / kv_params: dicts of str
        parameters for the backend (e.g. {"isa": "avx2"}) and the KV cache manager (e.g. {"k_type": "q8_0"})."""
        self._lib = _capi.lib()
        self._handle = None
        self._runtime = runtime
        self._model = model
        p = _capi.SessionParams()
        p.struct_size = ctypes.sizeof(p)
        p.n_ctx, p.n_batch, p.n_seq_max, p.n_threads = n_ctx, n_batch, n_seq_max, n_threads
        p.backend = backend.encode() if backend else None
        p.kv_cache = kv_cache.encode() if kv_cache else None
        bp = dict(backend_params or {})
        if device is not None:
            bp["device"] = str(int(device))
        keep = []  # the ctypes arrays must live until basalt_session_create returns
        if bp:
            p.backend_params = ctypes.pointer(_params(bp, keep))
        if kv_params:
            p.kv_params = ctypes.pointer(_params(kv_params, keep))
        handle = c_void_p()
        _check(self._lib.basalt_session_create(runtime._handle, model._handle, byref(p), byref(handle)))
        self._handle = handle
        self.n_vocab = self._lib.basalt_session_n_vocab(self._handle)
        self.n_ctx = self._lib.basalt_session_n_ctx(self._handle)

    def seq_length(self, seq_id=0):
        """Tokens cached for sequence seq_id."""
        n = c_uint32()
        _check(self._lib.basalt_session_seq_length(self._handle, seq_id, byref(n)))
        return n.value

    def decode(self, tokens, seq_id=0, positions=None, seq_ids=None, logits="last"):
        """Decodes a batch. By default all tokens belong to seq_id and continue its positions; give positions and
        seq_ids (lists as long as tokens) for a ragged batch of several sequences. logits: "last" (the last row),
        "all", or a list of booleans per row. Returns the number of logits rows produced."""
        n = len(tokens)
        if n == 0:
            raise ValueError("decode: no tokens")
        if positions is None:
            start = self.seq_length(seq_id)
            positions = range(start, start + n)
        if seq_ids is None:
            seq_ids = [seq_id] * n
        if len(positions) != n or len(seq_ids) != n:
            raise ValueError("decode: tokens, positions and seq_ids must have the same length")
        tok = (c_int32 * n)(*tokens)
        pos = (c_int32 * n)(*positions)
        seq = (c_int32 * n)(*seq_ids)
        want = None
        if logits == "all":
            want = (c_int8 * n)(*([1] * n))
        elif logits != "last":
            if len(logits) != n:
                raise ValueError("decode: logits must be 'last', 'all' or one flag per token")
            want = (c_int8 * n)(*[1 if x else 0 for x in logits])
        batch = _capi.Batch(ctypes.sizeof(_capi.Batch), 0, n, tok, pos, seq,
                            ctypes.cast(want, POINTER(c_int8)) if want is not None else None)
        _check(self._lib.basalt_session_decode(self._handle, byref(batch)))
        return self._lib.basalt_session_n_outputs(self._handle)

    def n_outputs(self):
        """Logits rows produced by the last decode."""
        return self._lib.basalt_session_n_outputs(self._handle)

    def _logits_ptr(self, row):
        ptr = POINTER(c_float)()
        _check(self._lib.basalt_session_logits(self._handle, row, byref(ptr)))
        return ptr

    def logits_view(self, row=0):
        """Logits of output row `row` as a memoryview of n_vocab floats, without a copy. It reads the session's
        buffer: valid only until the next decode or close."""
        arr = ctypes.cast(self._logits_ptr(row), POINTER(c_float * self.n_vocab)).contents
        return memoryview(arr).cast("B").cast("f")

    def logits(self, row=0):
        """Logits of output row `row` as a list of n_vocab floats (a copy)."""
        return self._logits_ptr(row)[:self.n_vocab]

    def sample(self, chain, row=0):
        """Samples from output row `row` with a SamplerChain (applied, token accepted); returns the token."""
        return chain._sample_ptr(self._logits_ptr(row), self.n_vocab)

    def seq_drop(self, seq_id):
        _check(self._lib.basalt_session_seq_drop(self._handle, seq_id))

    def seq_fork(self, src_seq_id, dst_seq_id):
        _check(self._lib.basalt_session_seq_fork(self._handle, src_seq_id, dst_seq_id))

    def seq_truncate(self, seq_id, n_keep):
        """Forgets positions >= n_keep of the sequence (e.g. rejected draft tokens)."""
        _check(self._lib.basalt_session_seq_truncate(self._handle, seq_id, n_keep))



# ---- sampler chains ------------------------------------------------------------------------------------------------


class SamplerChain(_Owned):
    """Samplers applied in order, the last selecting: SamplerChain(runtime, "top_k:40;top_p:0.9;temp:0.7;dist")."""

    _free = "basalt_sampler_chain_destroy"

    def __init__(self, runtime, spec="greedy", _handle=None):
        self._lib = _capi.lib()
        self._runtime = runtime
        self._handle = None
        if _handle is None:
            _handle = c_void_p()
            _check(self._lib.basalt_sampler_chain_create(runtime._handle, spec.encode(), byref(_handle)))
        self._handle = _handle
        self.spec = spec

    def __len__(self):
        return self._lib.basalt_sampler_chain_length(self._handle)

    @property
    def names(self):
        """The sampler names, in order."""
        return [self._lib.basalt_sampler_chain_name(self._handle, i).decode() for i in range(len(self))]

    def _sample_ptr(self, ptr, n):
        token = c_int32()
        _check(self._lib.basalt_sampler_chain_sample(self._handle, ptr, n, byref(token)))
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
        _check(self._lib.basalt_sampler_chain_accept(self._handle, token))

    def reset(self):
        """Forgets every sampler's per-sequence state."""
        _check(self._lib.basalt_sampler_chain_reset(self._handle))

    def clone(self):
        """A deep copy, state included."""
        handle = c_void_p()
        _check(self._lib.basalt_sampler_chain_clone(self._handle, byref(handle)))
        return SamplerChain(self._runtime, self.spec, _handle=handle)



# ---- samplers written in Python ------------------------------------------------------------------------------------


class SamplerError(Exception):
    """Raise from a Python sampler to fail with a given status (default ERR_INVALID_ARGUMENT); the message
    reaches basalt_last_error() prefixed with the sampler's name."""

    def __init__(self, message, status=_capi.ERR_INVALID_ARGUMENT):
        super().__init__(message)
        self.status = status


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


# ---- generation ----------------------------------------------------------------------------------------------------


def generate_tokens(model, prompt, n_predict, samplers="greedy", runtime=None, session=None, **session_args):
    """Tokenizes prompt, decodes it and samples up to n_predict tokens (stopping at an end-of-generation token
    or a full context); returns the generated token ids. model: a Model or a path; samplers: a chain text or a
    SamplerChain."""
    own = []
    try:
        if runtime is None:
            runtime = model._runtime if isinstance(model, Model) and model._runtime else Runtime()
        if not isinstance(model, Model):
            model = Model(model, runtime)
            own.append(model)
        if session is None:
            session = Session(runtime, model, **session_args)
            own.append(session)
        chain = samplers
        if not isinstance(chain, SamplerChain):
            chain = SamplerChain(runtime, samplers)
            own.append(chain)
        tokens = model.tokenize(prompt)
        if not tokens:
            raise ValueError("the prompt tokenizes to nothing")
        if len(tokens) > session.n_ctx:
            raise ValueError(f"the prompt has {len(tokens)} tokens, more than the context of {session.n_ctx}")
        session.decode(tokens)
        out = []
        pos = len(tokens)
        while len(out) < n_predict:
            token = session.sample(chain)
            if model.is_eog(token):
                break
            out.append(token)
            if len(out) >= n_predict or pos >= session.n_ctx:
                break
            session.decode([token])
            pos += 1
        return out
    finally:
        for obj in reversed(own):
            obj.close()


def generate(model, prompt, n_predict=32, samplers="greedy", runtime=None, **session_args):
    """Generates up to n_predict tokens after prompt and returns their text (the prompt not included).
    model: a path or a Model; samplers: a chain text, e.g. "top_k:40;top_p:0.9;temp:0.7;dist:seed=42"."""
    if isinstance(model, Model):
        tokens = generate_tokens(model, prompt, n_predict, samplers, runtime, **session_args)
        return b"".join(model.token_to_piece_bytes(t) for t in tokens).decode("utf-8", "replace")
    rt = runtime or Runtime()
    with Model(model, rt) as m:
        tokens = generate_tokens(m, prompt, n_predict, samplers, rt, **session_args)
        return b"".join(m.token_to_piece_bytes(t) for t in tokens).decode("utf-8", "replace")

