"""Basalt from Python: a thin ctypes layer over the public C API (libbasalt), standard library only.

    import basalt
    print(basalt.generate("model.gguf", "Once upon a time", 32, samplers="top_k:40;temp:0.7;dist:seed=1"))

    rt = basalt.Runtime()
    model = basalt.Model("model.gguf", rt)           # or a shipped model's name: "target", "draft"
    engine = basalt.Engine(rt, model, parallel=4)    # the generation loop: queue, continuous batching, decoders
    a = engine.submit("Once upon a time", max_tokens=32, samplers="top_k:40;temp:0.7;dist:seed=1")
    b = engine.submit("The cat", max_tokens=32, stop=["."], callback=lambda req, tokens, text, reason: ...)
    for piece in a:                                  # streams a's text (stepping the engine advances b too)
        print(piece, end="", flush=True)
    print(b.text(), b.finish_reason, b.stats()["ttft_ms"])

    session = basalt.Session(rt, model)              # below the engine: decode batches, read logits
    session.decode(model.tokenize("Hello"))
    row = session.logits()                           # a list of n_vocab floats (logits_view(): a memoryview, no copy)

generate() and generate_tokens() submit one request to an Engine (the loop `basalt run` uses: same output).
Engine(own_thread=True) steps on a thread of its own; callers submit, iterate and read from any thread.

Samplers written in Python subclass basalt.Sampler and are registered on a runtime (Runtime.register_sampler);
they are then used in chains, sessions and engines exactly like the plugins' samplers.

Lifetimes: every object keeps the objects it was made from alive (a chain its runtime, a session its runtime
and model, an engine its runtime and models, a request its engine), and the C objects are freed children first
whatever order the interpreter finalises them in. close() (also `with` exit) on a Runtime or Model first
closes everything made from it that is still open; closing an Engine cancels its unfinished requests, which
stay readable. A call on a closed object raises ValueError ("SamplerChain is closed (closed with its
Runtime)"). Engines still open at interpreter exit are closed by an atexit handler, while the interpreter is
whole. Errors of the library raise BasaltError with its status and message.

libbasalt is found through $BASALT_LIBRARY, else relative to this package (see _capi.find_library).
"""
import atexit
import codecs
import copy
import ctypes
import itertools
import operator
import os
import threading
import time
import weakref
from ctypes import POINTER, byref, c_char_p, c_float, c_int8, c_int32, c_size_t, c_uint8, c_uint32, c_void_p

from . import _capi
from ._capi import (SAMPLER_ARGMAX_INVARIANT, SAMPLER_DRAFT_SAFE, SAMPLER_SELECTS, TokenData)

__all__ = [
    "BasaltError", "RequestError", "Runtime", "Model", "Session", "SamplerChain", "Engine", "Request", "Sampler",
    "SamplerError", "Candidates",
    "generate", "generate_tokens", "decoder_requirements", "version", "library_path", "SAMPLER_ARGMAX_INVARIANT", "SAMPLER_DRAFT_SAFE",
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


_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _int(value, what, lo=_INT32_MIN, hi=_INT32_MAX):
    """value as an int in [lo, hi]; TypeError (not an integer) or ValueError (out of range) naming `what`: ctypes
    would silently wrap a value past 32 bits (2**32 + 300 reads as 300)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = operator.index(value)  # numpy integers and the like
        except TypeError:
            raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None
    if not lo <= value <= hi:
        raise ValueError(f"{what} {value} is out of range ({lo}..{hi})")
    return value


def _ids(values, what):
    """A sequence of token ids checked by _int, as a ctypes int32 array."""
    checked = [_int(v, f"{what}[{i}]") for i, v in enumerate(values)]
    return (c_int32 * len(checked))(*checked)


def _text_bytes(text, what):
    """str as UTF-8, or a bytes-like object; TypeError for anything else (an int would become NUL bytes)."""
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError(f"{what} must be str or bytes, not {type(text).__name__}")


# ---- runtime -------------------------------------------------------------------------------------------------------


class _Node:
    """One C object: its handle, the function freeing it, the nodes it depends on (parents: a chain's runtime, a
    session's runtime and model, ...) and the nodes depending on it (children).

    The C free runs once the owner let go (close() or garbage collection) *and* no child is left, so C objects
    are freed children first whatever order Python finalises their wrappers in: the cyclic garbage collector
    and interpreter shutdown call finalisers in no particular order, even when a child refers to its parent.
    close() closes the children first (a cascade). Nothing here may need a module global: a finaliser can run
    when the module's globals are already gone, so the free function, the lock and all state live on the node.
    """
    __slots__ = ("kind", "handle", "free", "parents", "children", "released", "closed", "closed_by", "keep",
                 "check", "__weakref__")
    _lock = threading.Lock()  # guards the bookkeeping only; C frees run outside it

    def __init__(self, kind, handle, free, parents=(), keep=None, check=None):
        self.kind = kind
        self.handle = handle
        self.free = free
        self.parents = [p for p in parents if p is not None]
        self.children = {}  # node -> None (an ordered set)
        self.released = False  # the owner let go: free as soon as no child is left
        self.closed = False  # closed explicitly (or by a parent's close): the wrapper refuses every call
        self.closed_by = None  # the kind of the parent whose close() closed this one
        self.keep = keep  # what the C object calls back into (ctypes callbacks): kept until it is freed
        self.check = check  # raises when the object cannot be closed now (an engine inside its own step)
        with self._lock:
            for p in self.parents:
                p.children[self] = None

    def _claim(self):
        # Under _lock: takes the handle when it may be freed now (owner gone, no child left).
        if self.handle is None or not self.released or self.children:
            return None
        h = self.handle
        self.handle = None
        return h

    def _free(self, h):
        # Frees h, then each parent whose owner let go and which has no child left.
        self.free(h)
        self.keep = None
        ready = []
        with self._lock:
            for p in self.parents:
                p.children.pop(self, None)
                ph = p._claim()
                if ph is not None:
                    ready.append((p, ph))
            self.parents = []
        for p, ph in ready:
            p._free(ph)

    def release(self):
        """The owner let go (finaliser): free now, or when the last child is freed."""
        with self._lock:
            self.released = True
            h = self._claim()
        if h is not None:
            self._free(h)

    def _check_tree(self):
        if self.check is not None and not self.closed:
            self.check()
        for c in [c for c in self.children]:
            c._check_tree()

    def close(self, closed_by=None):
        """Closes the children (depth first), then frees this object."""
        if not self.closed:
            self._check_tree()
        with self._lock:
            if not self.closed:
                self.closed = True
                self.closed_by = closed_by
            self.released = True
            kids = [c for c in self.children]
        for c in kids:
            c.close(self.kind)
        with self._lock:
            h = self._claim()
        if h is not None:
            self._free(h)


class _Owned:
    """A wrapper owning one C object through a _Node. close() (also on `with` exit and garbage collection)
    frees it; closing a parent (Runtime, Model, Engine's models) first closes every object made from it that is
    still open, so C objects are always freed children first. Any call on a closed object raises ValueError."""

    _node = None

    def _own(self, handle, free, parents=(), keep=None, check=None):
        self._node = _Node(type(self).__name__, handle, free, [p._node for p in parents if p is not None], keep,
                           check)

    @property
    def _h(self):
        """The live C handle; ValueError once closed (never a freed handle)."""
        n = self._node
        if n is None or n.closed or n.handle is None:
            why = f" (closed with its {n.closed_by})" if n is not None and n.closed_by else ""
            raise ValueError(f"{type(self).__name__} is closed{why}")
        return n.handle

    @property
    def closed(self):
        n = self._node
        return n is None or n.closed or n.handle is None

    def close(self):
        if self._node is not None:
            self._node.close()

    def __enter__(self):
        self._h  # noqa: B018 -- a closed object cannot be entered
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self._node.release()
        except:  # noqa: E722 -- at interpreter shutdown even the builtins may be gone; nothing may leave a finaliser
            pass


class Runtime(_Owned):
    """The loaded plugins (discovered beside libbasalt and in $BASALT_PLUGIN_PATH unless disabled) plus the
    samplers registered from Python. Everything created from a runtime (models, sessions, chains, engines)
    keeps it alive. close() first closes everything made from it that is still open (their calls then raise
    ValueError), then unloads the plugins."""

    def __init__(self, plugins=(), default_plugins=True, env_plugins=True):
        self._lib = _capi.lib()
        self._registrations = []  # keeps the ctypes callbacks of registered samplers alive
        params = _capi.RuntimeParams(ctypes.sizeof(_capi.RuntimeParams), 0)
        if not default_plugins:
            params.flags |= _capi.RUNTIME_NO_DEFAULT_PLUGINS
        if not env_plugins:
            params.flags |= _capi.RUNTIME_NO_ENV_PLUGINS
        handle = c_void_p()
        _check(self._lib.basalt_runtime_create(byref(params), byref(handle)))
        # the registrations' callbacks stay alive as long as the C runtime (and the chains that call them)
        self._own(handle, self._lib.basalt_runtime_destroy, keep=self._registrations)
        for path in plugins:
            self.load_plugin(path)

    def load_plugin(self, path):
        """Loads one plugin library (its components become available); raises BasaltError naming the file."""
        _check(self._lib.basalt_runtime_load_plugin(self._h, str(path).encode()))

    def components(self):
        """Every loaded component as a dict: kind, name, description, version, plugin, file."""
        out = []
        kinds = {1: "backend", 2: "kv_cache", 3: "sampler", 4: "decoder", 5: "steering"}
        for i in range(self._lib.basalt_runtime_component_count(self._h)):
            info = _capi.ComponentInfo()
            info.struct_size = ctypes.sizeof(info)
            _check(self._lib.basalt_runtime_component_info(self._h, i, byref(info)))
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
        _check(self._lib.basalt_runtime_register_sampler(self._h, name.encode(), byref(reg.iface)))
        self._registrations.append(reg)



# ---- models --------------------------------------------------------------------------------------------------------


class Model(_Owned):
    """A GGUF model file (or a shipped model's name, "target" / "draft"): hyper-parameters and tokenizer.
    It keeps its runtime alive; close() first closes the sessions and engines made from it that are still
    open."""

    def __init__(self, path, runtime=None):
        self._lib = _capi.lib()
        self._runtime = runtime
        handle = c_void_p()
        _check(self._lib.basalt_model_load(runtime._h if runtime else None, str(path).encode(), None,
                                           byref(handle)))
        self._own(handle, self._lib.basalt_model_free, [runtime])
        info = _capi.ModelInfo()
        info.struct_size = ctypes.sizeof(info)
        _check(self._lib.basalt_model_describe(self._h, byref(info)))
        self.arch = _str(info.arch)
        self.name = _str(info.name)
        self.n_vocab = info.n_vocab
        self.n_ctx_train = info.n_ctx_train
        self.n_layer = info.n_layer
        self.n_embd = info.n_embd
        self.n_expert = info.n_expert
        self.n_expert_used = info.n_expert_used

    def tokenize(self, text, add_special=True, parse_special=False):
        """The token ids of `text` (str or UTF-8 bytes)."""
        data = _text_bytes(text, "tokenize: text")
        flags = (_capi.TOKENIZE_ADD_SPECIAL if add_special else 0) | (_capi.TOKENIZE_PARSE_SPECIAL
                                                                       if parse_special else 0)
        count = c_size_t()
        st = self._lib.basalt_tokenize(self._h, data, len(data), flags, None, 0, byref(count))
        if st not in (_capi.OK, _capi.ERR_CAPACITY):
            _check(st)
        if count.value == 0:
            return []
        buf = (c_int32 * count.value)()
        _check(self._lib.basalt_tokenize(self._h, data, len(data), flags, buf, count.value, byref(count)))
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
        ids = _ids(tokens, "detokenize: tokens")
        flags = (_capi.DETOKENIZE_REMOVE_SPECIAL if remove_special else 0) | (_capi.DETOKENIZE_UNPARSE_SPECIAL
                                                                               if unparse_special else 0)
        return self._text(lambda b, cap, n: self._lib.basalt_detokenize(self._h, ids, len(tokens), flags, b,
                                                                          cap, n))

    def detokenize(self, tokens, remove_special=False, unparse_special=False):
        """The text of `tokens` (invalid UTF-8 replaced)."""
        return self.detokenize_bytes(tokens, remove_special, unparse_special).decode("utf-8", "replace")

    def token_to_piece_bytes(self, token, special=False):
        """The UTF-8 bytes of one token."""
        token = _int(token, "token_to_piece: token")
        return self._text(lambda b, cap, n: self._lib.basalt_token_to_piece(self._h, token, int(special), b,
                                                                              cap, n))

    def token_to_piece(self, token, special=False):
        """The text of one token (invalid UTF-8 replaced; join token_to_piece_bytes for exact text)."""
        return self.token_to_piece_bytes(token, special).decode("utf-8", "replace")

    def is_eog(self, token):
        """True when `token` ends generation (EOS, EOT, ...)."""
        h = self._h  # a closed model raises ValueError
        return self._lib.basalt_token_is_eog(h, _int(token, "is_eog: token")) != 0

    def special_tokens(self):
        """The vocabulary's special tokens as a dict (-1 when absent)."""
        s = _capi.SpecialTokens()
        s.struct_size = ctypes.sizeof(s)
        _check(self._lib.basalt_model_special_tokens(self._h, byref(s)))
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
    """A model on a backend with a KV cache, decoding batches of sequences (keeps its runtime and model
    alive). For generation use an Engine: it batches requests and runs the samplers and decoders."""

    def __init__(self, runtime, model, n_ctx=0, n_batch=0, n_seq_max=0, n_threads=0, backend=None, kv_cache=None,
                 device=None, backend_params=None, kv_params=None, moe_router=None, k_type=None, v_type=None,
                 kv_residual=None):
        """device: the backend's device index (None: its default); backend_params / kv_params: dicts of str
        parameters for the backend (e.g. {"isa": "avx2"}) and the KV cache manager (e.g. {"k_type": "q8_0"}).
        moe_router: MoE routing, "dropless" (None, the default) or "capacity:factor=C,overflow=drop|reroute"
        (docs/moe.md).
        kv_cache: a manager name or "NAME:key=value,..." (e.g. "sink:n_sink=4,window=252", a streaming cache that
        runs past the context: docs/kv-cache.md).
        k_type / v_type / kv_residual: the stored K and V types and the residual window (docs/kv-cache.md), the
        same as kv_params' "k_type", "v_type", "residual"."""
        kv_params = _kv_types(kv_params, k_type, v_type, kv_residual)
        self._lib = _capi.lib()
        self._runtime = runtime
        self._model = model
        p = _capi.SessionParams()
        p.struct_size = ctypes.sizeof(p)
        p.n_ctx, p.n_batch, p.n_seq_max, p.n_threads = n_ctx, n_batch, n_seq_max, n_threads
        keep = []  # the ctypes arrays must live until basalt_session_create returns
        _set_components(p, backend, kv_cache, backend_params, device, kv_params, keep)
        if moe_router is not None:
            p.moe_router = moe_router.encode()
        handle = c_void_p()
        _check(self._lib.basalt_session_create(runtime._h, model._h, byref(p), byref(handle)))
        self._own(handle, self._lib.basalt_session_free, [runtime, model])
        self.n_vocab = self._lib.basalt_session_n_vocab(self._h)
        self.n_ctx = self._lib.basalt_session_n_ctx(self._h)

    def set_moe_stats(self, enable=True):
        """Turns the collection of MoE routing statistics on (counters start at 0) or off, from the next decode
        on; a model without experts raises BasaltError."""
        _check(self._lib.basalt_session_set_moe_stats(self._h, 1 if enable else 0))

    def moe_stats(self):
        """The MoE routing statistics per layer since set_moe_stats(True): a list of dicts (passes, tokens,
        assignments, dropped, rerouted, imbalance = max/mean of per_expert, per_expert)."""
        return _moe_stats(self._lib.basalt_session_moe_stats, self._h, self._model.n_layer,
                          self._model.n_expert)

    def seq_length(self, seq_id=0):
        """Tokens cached for sequence seq_id."""
        n = c_uint32()
        _check(self._lib.basalt_session_seq_length(self._h, seq_id, byref(n)))
        return n.value

    def encode(self, tokens, seq_id=0, seq_ids=None):
        """Encoder-decoder models (t5): encodes a source into empty sequence seq_id (positions 0..n-1), or, with
        seq_ids (one per token), the sources of several sequences in one ragged encoder batch (each sequence's
        tokens in order). Its decoder tokens then go through decode(); the first is usually the model's decoder
        start token (metadata "t5.decoder_start_token_id")."""
        n = len(tokens)
        if n == 0:
            raise ValueError("encode: no tokens")
        if seq_ids is None:
            seq_ids = [seq_id] * n
        if len(seq_ids) != n:
            raise ValueError("encode: tokens and seq_ids must have the same length")
        seen = {}
        positions = []
        for s in seq_ids:
            positions.append(seen.get(s, 0))
            seen[s] = positions[-1] + 1
        tok = _ids(tokens, "encode: tokens")
        pos = _ids(positions, "encode: positions")
        seq = _ids(seq_ids, "encode: seq_ids")
        batch = _capi.Batch(ctypes.sizeof(_capi.Batch), 0, n, tok, pos, seq, None)
        _check(self._lib.basalt_session_encode(self._h, byref(batch)))

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
        tok = _ids(tokens, "decode: tokens")
        pos = _ids(positions, "decode: positions")
        seq = _ids(seq_ids, "decode: seq_ids")
        want = None
        if logits == "all":
            want = (c_int8 * n)(*([1] * n))
        elif logits != "last":
            if len(logits) != n:
                raise ValueError("decode: logits must be 'last', 'all' or one flag per token")
            want = (c_int8 * n)(*[1 if x else 0 for x in logits])
        batch = _capi.Batch(ctypes.sizeof(_capi.Batch), 0, n, tok, pos, seq,
                            ctypes.cast(want, POINTER(c_int8)) if want is not None else None)
        _check(self._lib.basalt_session_decode(self._h, byref(batch)))
        return self._lib.basalt_session_n_outputs(self._h)

    def n_outputs(self):
        """Logits rows produced by the last decode."""
        return self._lib.basalt_session_n_outputs(self._h)

    def _logits_ptr(self, row):
        ptr = POINTER(c_float)()
        _check(self._lib.basalt_session_logits(self._h, row, byref(ptr)))
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
        _check(self._lib.basalt_session_seq_drop(self._h, seq_id))

    def seq_fork(self, src_seq_id, dst_seq_id):
        _check(self._lib.basalt_session_seq_fork(self._h, src_seq_id, dst_seq_id))

    def seq_truncate(self, seq_id, n_keep):
        """Forgets positions >= n_keep of the sequence (e.g. rejected draft tokens)."""
        _check(self._lib.basalt_session_seq_truncate(self._handle, seq_id, n_keep))

    def set_steering(self, seq_id, vectors):
        """Activation steering of sequence seq_id from the next decode on: vectors maps a layer (from 0) to its
        n_embd floats, added to the residual stream at that layer's output (an empty dict or None: no steering).
        Forks copy it; other sequences' rows are computed exactly as without it."""
        if not vectors:
            _check(self._lib.basalt_session_seq_set_steering(self._h, seq_id, None, None, 0, 0))
            return
        n_layer, n_embd = self._model.n_layer, self._model.n_embd
        flat = (c_float * (n_layer * n_embd))()
        flags = (c_uint8 * n_layer)()
        for layer, vec in vectors.items():
            layer = int(layer)
            if not 0 <= layer < n_layer:
                raise ValueError(f"set_steering: layer {layer} is not in 0..{n_layer - 1}")
            vec = [float(v) for v in vec]
            if len(vec) != n_embd:
                raise ValueError(f"set_steering: layer {layer} has {len(vec)} values, the model's n_embd is {n_embd}")
            flat[layer * n_embd:(layer + 1) * n_embd] = vec
            flags[layer] = 1
        _check(self._lib.basalt_session_seq_set_steering(self._h, seq_id, flat, flags, n_layer, n_embd))



# ---- sampler chains ------------------------------------------------------------------------------------------------


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


# ---- engine: requests, continuous batching, decoders --------------------------------------------------------------


class RequestError(BasaltError):
    """A request that finished with reason "error" (its decoder, a sampler of its chain or the forward pass
    failed), raised by the request's iteration, text() and tokens(). str() is the request's message; .request is
    the Request. The C API keeps no status for a failed request: .status is BASALT_ERR_INTERNAL."""

    def __init__(self, message, request):
        super().__init__(_capi.ERR_INTERNAL, message)
        self.request = request


def _kv_types(kv_params, k_type, v_type, kv_residual):
    """kv_params with the k_type / v_type / kv_residual keyword arguments merged in (None: left out)."""
    out = dict(kv_params or {})
    for key, value in (("k_type", k_type), ("v_type", v_type), ("residual", kv_residual)):
        if value is not None:
            out[key] = str(value)
    return out or None


def _set_components(p, backend, kv_cache, backend_params, device, kv_params, keep):
    """Fills the backend/cache fields shared by basalt_session_params and basalt_engine_params; the ctypes objects
    they point to are appended to keep (which must outlive the create call)."""
    p.backend = backend.encode() if backend else None
    p.kv_cache = kv_cache.encode() if kv_cache else None
    bp = dict(backend_params or {})
    if device is not None:
        bp["device"] = str(_int(device, "device", 0))
    if bp:
        p.backend_params = ctypes.pointer(_params(bp, keep))
    if kv_params:
        p.kv_params = ctypes.pointer(_params(kv_params, keep))


def _u32(name, value):
    return _int(value, name, 0, 0xFFFFFFFF)


def _i32(name, value, low=_INT32_MIN):
    return _int(value, name, low)


class _Callback:
    """The Python side of one request's callback: the function, an incremental UTF-8 decoder of its text, and
    the exception the function raised (kept until re-raised once, see Engine.submit)."""

    def __init__(self, fn, lib, dispatch):
        self.fn = fn
        self.lib = lib
        self.dispatch = dispatch
        self.request = None  # weakref to the Request: the C engine never keeps a Request wrapper alive
        self.ready = threading.Event()  # set once Engine.submit has made the Request: calls wait for it
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.failed = False
        self.error = None

    def deliver(self, handle, tokens, data, finish):
        self.ready.wait()
        if self.failed:
            return
        req = self.request() if self.request is not None else None
        if req is None:
            return
        text = self.decoder.decode(data, final=finish != _capi.FINISH_NONE)
        reason = self.lib.basalt_finish_reason_name(finish).decode() if finish != _capi.FINISH_NONE else None
        try:
            self.fn(req, tokens, text, reason)
        except BaseException as e:  # noqa: B902 -- stored, re-raised by the next Python call; never into C
            self.failed = True
            self.error = e
            self.dispatch.failed.append(self)
            if finish == _capi.FINISH_NONE and handle:
                self.lib.basalt_request_cancel(handle)  # the handle is valid for the call


class _Dispatch:
    """An engine's one basalt_request_callback. Each request's user_data is a number naming its _Callback; a
    call for a number no longer registered (its Request was freed) does nothing. It lives on the engine's node
    until basalt_engine_destroy has returned, so C never calls a freed ctypes callback."""

    def __init__(self):
        self.callbacks = {}
        self.numbers = itertools.count(1)
        self.failed = []  # _Callbacks whose function raised, for the engine's next step()/run() to re-raise
        self.inside = set()  # threads running this engine's step or one of its callbacks
        self.fn = _capi.RequestCallbackFn(self._call)

    def _call(self, handle, tokens, n_tokens, text, text_len, finish, user_data, string_at=ctypes.string_at,
              get_ident=threading.get_ident):
        try:
            cb = self.callbacks.get(user_data)
            if cb is None:
                return
            if finish != 0:
                self.callbacks.pop(user_data, None)  # the last call of this request
            me = get_ident()
            nested = me in self.inside
            self.inside.add(me)
            try:
                cb.deliver(handle, tokens[:n_tokens] if n_tokens else [],
                           string_at(text, text_len) if text_len else b"", finish)
            finally:
                if not nested:
                    self.inside.discard(me)
        except:  # noqa: E722 -- nothing may propagate into C
            pass

    def raise_failed(self):
        while self.failed:
            cb = self.failed.pop(0)
            if cb.error is not None:
                e, cb.error = cb.error, None
                raise e


_live_engines = weakref.WeakSet()


@atexit.register
def _close_engines():
    # At exit, before module teardown: an engine's own thread may call Python (callbacks, Python samplers) and
    # must be stopped while the interpreter is whole. Requests finish as cancelled.
    for e in list(_live_engines):
        try:
            e.close()
        except Exception:  # noqa: BLE001 -- best effort at exit
            pass


class Engine(_Owned):
    """The generation loop (basalt_engine_*): a FIFO queue of requests and continuous batching. Each step packs
    the work of every running request (decode tokens first, then prefill chunks) into one ragged batch per
    model under a token budget; a request is admitted when a sequence and its worst-case KV room are free.

        engine = basalt.Engine(rt, model, parallel=4)
        a = engine.submit("Once upon a time", max_tokens=32, samplers="top_k:40;temp:0.7;dist:seed=1")
        b = engine.submit("The cat", max_tokens=32, stop=["."])
        for piece in a:                    # streams a's text; stepping the engine also advances b
            print(piece, end="", flush=True)
        print(b.text(), b.finish_reason, b.stats()["tokens_per_s"])

    ctx: positions one request may hold (0: the model's training context, at most 4096); parallel: requests
    running at once; seq_max: cache sequences (0: parallel; beams need more); kv_slots: KV slots shared by all
    sequences (0: ctx x seq_max); max_batch_tokens: token budget of a step (0: 512); prefill_chunk: longest
    prefill piece per step (0: whole prompts); threads: backend threads (0: its default); backend, kv_cache:
    component names (None: "cpu", "paged"; kv_cache may carry parameters: "sink:n_sink=4,window=252"); device,
    backend_params, kv_params: as for Session; second_model: a draft or amateur Model with the same vocabulary,
    for decoders that need one. prefix_cache=False: prompts never reuse the K/V cached by earlier requests (by
    default the longest cached chain of full blocks with the same tokens and cache_salt is reused;
    stats()["cached_tokens"] counts it). moe_router: MoE routing of every batch, "dropless" (None) or
    "capacity:factor=C,overflow=drop|reroute" (docs/moe.md); moe_stats=True: collect the routing statistics per
    layer (moe_stats()).

    own_thread=False: the caller drives the loop (step(), run(), or iterating a request, which steps). With
    own_thread=True the engine steps on a thread of its own; callers submit, iterate (waiting) and read.
    Callbacks and Python samplers then run on that thread.

    The engine keeps its runtime and models alive; closing one of them closes the engine first. close() (also
    on `with` exit, at garbage collection and at interpreter exit) cancels the unfinished requests, which stay
    readable (finish_reason "cancelled"), and stops the engine's thread. step(), run() and close() are not
    concurrent with each other (a lock orders them); submit() may be called from any thread."""

    def __init__(self, runtime, model, *, second_model=None, ctx=0, parallel=1, seq_max=0, kv_slots=0,
                 max_batch_tokens=0, prefill_chunk=0, threads=0, backend=None, kv_cache=None, own_thread=False,
                 device=None, backend_params=None, kv_params=None, prefix_cache=True, moe_router=None,
                 moe_stats=False, k_type=None, v_type=None, kv_residual=None):
        kv_params = _kv_types(kv_params, k_type, v_type, kv_residual)
        self._lib = _capi.lib()
        self._runtime = runtime
        self._model = model
        self._second_model = second_model
        self.own_thread = bool(own_thread)
        p = _capi.EngineParams()
        p.struct_size = ctypes.sizeof(p)
        p.flags = ((_capi.ENGINE_OWN_THREAD if own_thread else 0) |
                   (0 if prefix_cache else _capi.ENGINE_NO_PREFIX_CACHE) |
                   (_capi.ENGINE_MOE_STATS if moe_stats else 0))
        p.n_ctx = _u32("ctx", ctx)
        p.n_parallel = _u32("parallel", parallel)
        p.n_seq_max = _u32("seq_max", seq_max)
        p.n_kv_slots = _u32("kv_slots", kv_slots)
        p.max_batch_tokens = _u32("max_batch_tokens", max_batch_tokens)
        p.prefill_chunk = _u32("prefill_chunk", prefill_chunk)
        p.n_threads = _u32("threads", threads)
        keep = []  # the ctypes arrays must live until basalt_engine_create returns
        _set_components(p, backend, kv_cache, backend_params, device, kv_params, keep)
        p.second_model = second_model._h if second_model is not None else None
        if moe_router is not None:
            p.moe_router = moe_router.encode()
        handle = c_void_p()
        _check(self._lib.basalt_engine_create(runtime._h, model._h, byref(p), byref(handle)))
        self._dispatch = _Dispatch()
        self._lock = threading.Lock()  # step/run/close: the C API allows one at a time
        lock, destroy, inside = self._lock, self._lib.basalt_engine_destroy, self._dispatch.inside

        def free(h):
            with lock:
                destroy(h)

        def check(get_ident=threading.get_ident):
            if get_ident() in inside:
                raise RuntimeError("an Engine cannot be closed from inside its own step (a request callback)")

        self._own(handle, free, [runtime, model, second_model], keep=self._dispatch, check=check)
        _live_engines.add(self)

    def submit(self, prompt=None, tokens=None, samplers="greedy", decoder=None, max_tokens=-1, seed=-1, stop=(),
               stop_tokens=(), ignore_eog=False, callback=None, *, add_special=True, parse_special=False,
               cache_salt=None, steer=None, source=None, source_tokens=None, logprobs=None):
        """Queues a request and returns its Request; it starts when admission allows (FIFO).

        prompt: text (str or UTF-8 bytes; tokenized with BOS as the vocabulary asks unless add_special=False;
        parse_special: control-token text becomes the token) or tokens: the prompt as token ids. samplers: a
        chain text ("top_k:40;temp:0.7;dist:seed=1") or a SamplerChain (its text is used). decoder:
        "NAME[:key=value,...]" (None: "sample"). max_tokens: -1 until the context is full. seed: given to every
        "dist" without a seed of its own (-1: none). stop: stop strings (the text ends before the first match);
        stop_tokens: extra end-of-generation ids; ignore_eog: do not stop at the vocabulary's end tokens.
        cache_salt: a str isolating this request's prefix-cache entries (requests share cached K/V only with the
        same salt, e.g. one per tenant; None: the shared default). steer: activation steering, a spec
        "FILE[:SCALE[:A-B]]" (a llama.cpp control-vector GGUF, scale default 1, layers A..B from 0) or a list of
        them (the vectors sum); a file that does not fit the model raises BasaltError naming both figures.
        Encoder-decoder models (t5): the prompt (text or tokens) is the source the encoder reads and the decoder
        starts from the model's decoder start token; or give source (text) / source_tokens (ids) and the prompt,
        if any, is the decoder's prefix (tokens as given, text after the start token).
        logprobs: None, or N in 0..20: record each emitted token's log-probability under the model's raw
        distribution (log-softmax of its logits row, before any sampler) and its N most likely alternatives (see
        Request.logprobs()); decoder "sample" only.

        callback(request, tokens, text, finish_reason) is called after each step that produced output for the
        request (tokens: list of ids, text: str, finish_reason: None while running, the reason's name on the
        last call), on the thread running the step; it may call the request's methods and submit(), not step(),
        run() or close(). An exception it raises cancels the request and is re-raised once, by the next step()
        or run() of the engine or the next read(), iteration, text(), tokens() or wait() of the request,
        whichever comes first. Everything is checked here: a bad prompt, chain or decoder raises BasaltError
        with the library's message."""
        h = self._h
        p = _capi.RequestParams()
        p.struct_size = ctypes.sizeof(p)
        p.flags = ((0 if add_special else _capi.REQUEST_NO_SPECIAL) |
                   (_capi.REQUEST_PARSE_SPECIAL if parse_special else 0) |
                   (_capi.REQUEST_IGNORE_EOG if ignore_eog else 0) |
                   (_capi.REQUEST_LOGPROBS if logprobs is not None else 0))
        if logprobs is not None:
            if isinstance(logprobs, bool) or not isinstance(logprobs, int):
                raise TypeError(f"submit: logprobs must be None or an int (alternatives per token), not {logprobs!r}")
            p.n_top_logprobs = _i32("logprobs", logprobs)
        keep = []  # borrowed by basalt_engine_submit for the call
        if tokens is not None:
            ids = _ids(tokens, "submit: tokens")
            keep.append(ids)
            p.tokens = ids
            p.n_tokens = len(tokens)
        elif prompt is not None:
            data = _text_bytes(prompt, "submit: prompt")
            keep.append(data)
            p.prompt = data
            p.prompt_len = len(data)
        if source_tokens is not None:
            src = _ids(source_tokens, "submit: source_tokens")
            keep.append(src)
            p.source_tokens = src
            p.n_source_tokens = len(source_tokens)
        elif source is not None:
            data = _text_bytes(source, "submit: source") + b"\0"
            keep.append(data)
            p.source = data
        if isinstance(samplers, SamplerChain):
            samplers = samplers.spec
        p.samplers = samplers.encode() if samplers is not None else None
        p.decoder = decoder.encode() if decoder else None
        if cache_salt is not None:
            salt = _text_bytes(cache_salt, "submit: cache_salt")
            keep.append(salt)
            p.cache_salt = salt
        if steer is not None:
            if isinstance(steer, (str, bytes, os.PathLike)):
                steer = [steer]
            specs = [os.fsencode(s) for s in steer]
            if specs:
                arr = (c_char_p * len(specs))(*specs)
                keep.extend([specs, arr])
                p.steer = ctypes.cast(arr, POINTER(c_char_p))
                p.n_steer = len(specs)
        p.max_tokens = _i32("max_tokens", max_tokens)
        seed = int(seed)
        if not -0x8000000000000000 <= seed <= 0x7FFFFFFFFFFFFFFF:
            raise ValueError(f"seed = {seed} is out of the int64 range")
        p.seed = seed
        if isinstance(stop, (str, bytes)):
            stop = [stop]
        stops = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in stop]
        if stops:
            arr = (c_char_p * len(stops))(*stops)
            keep.extend([stops, arr])
            p.stop = ctypes.cast(arr, POINTER(c_char_p))
            p.n_stop = len(stops)
        stop_tokens = list(stop_tokens)
        if stop_tokens:
            arr = _ids(stop_tokens, "submit: stop_tokens")
            keep.append(arr)
            p.stop_tokens = arr
            p.n_stop_tokens = len(stop_tokens)
        cb = key = None
        if callback is not None:
            cb = _Callback(callback, self._lib, self._dispatch)
            key = next(self._dispatch.numbers)
            self._dispatch.callbacks[key] = cb
            p.callback = self._dispatch.fn
            p.user_data = key
        try:
            out = c_void_p()
            st = self._lib.basalt_engine_submit(h, byref(p), byref(out))
            if st != _capi.OK:
                self._dispatch.callbacks.pop(key, None)
                _check(st)
            return Request(self, out, cb, key)
        finally:
            if cb is not None:
                cb.ready.set()

    def _enter(self):
        me = threading.get_ident()
        if me in self._dispatch.inside:
            raise RuntimeError("step() and run() cannot be called from inside the engine's step (a request callback)")
        return me

    def step(self):
        """Runs one scheduler step (admission, one batched forward per model, the decoders); returns the number
        of requests still queued or running. Only without own_thread. A failing decoder or sampler fails its
        request only; a failing forward fails the requests of its batch and raises BasaltError."""
        me = self._enter()
        n = c_size_t()
        with self._lock:
            h = self._h
            self._dispatch.inside.add(me)
            try:
                st = self._lib.basalt_engine_step(h, byref(n))
            finally:
                self._dispatch.inside.discard(me)
        self._dispatch.raise_failed()
        _check(st)
        return n.value

    def run(self):
        """Steps until no request is queued or running (with own_thread: waits for that)."""
        if not self.own_thread:
            while self.step() > 0:
                pass
            return
        self._enter()
        with self._lock:
            st = self._lib.basalt_engine_run(self._h)
        self._dispatch.raise_failed()
        _check(st)

    def stats(self):
        """Engine-wide counters: steps, queued, running, finished, prompt_tokens, generated_tokens,
        batch_tokens_max, kv_slots, kv_slots_free, cached_tokens (prompt tokens reused from the prefix cache)."""
        s = _capi.EngineStats()
        s.struct_size = ctypes.sizeof(s)
        _check(self._lib.basalt_engine_stats_get(self._h, byref(s)))
        return {name: getattr(s, name) for name, _ in _capi.EngineStats._fields_[2:]}

    def moe_stats(self):
        """The main model's MoE routing statistics per layer as of the last step (the engine must be created with
        moe_stats=True): a list of dicts as Session.moe_stats()."""
        return _moe_stats(self._lib.basalt_engine_moe_stats, self._h, self._model.n_layer,
                          self._model.n_expert)


def _moe_stats(fn, handle, n_layer, n_expert):
    out = []
    for layer in range(n_layer):
        s = _capi.MoeStats()
        s.struct_size = ctypes.sizeof(s)
        per = (ctypes.c_uint64 * max(1, n_expert))()
        _check(fn(handle, layer, byref(s), per, n_expert))
        d = {name: getattr(s, name) for name, _ in _capi.MoeStats._fields_[2:]}
        d["per_expert"] = list(per)[:n_expert]
        out.append(d)
    return out


_REQUEST_STATS = ("prompt_tokens", "cached_tokens", "generated_tokens", "queue_ms", "ttft_ms", "total_ms",
                  "itl_mean_ms", "itl_p50_ms", "itl_p99_ms", "itl_max_ms", "tokens_per_s", "source_tokens",
                  "encode_ms")


class Request(_Owned):
    """One request of an Engine (made by Engine.submit). It keeps its engine alive; its handle stays readable
    after the engine is closed (the request then reads as finished, "cancelled").

    Output: `for piece in request:` yields the text as it streams, ending when the request finishes (it steps
    the engine when the caller drives the loop, else waits for the engine's thread); read() returns what is new
    as (tokens, text); text() and tokens() wait for the end and return everything, including what read() and
    the iteration already returned. Text pieces never split a UTF-8 character and never end in a held-back
    prefix of a stop string. A request that finished with "error" raises RequestError from the iteration, text()
    and tokens(). close() frees the handle (an unfinished request is cancelled); it is not concurrent with other
    calls on the same request."""

    _TOKENS = 256
    _TEXT = 4096

    def __init__(self, engine, handle, callback=None, key=None):
        self._lib = engine._lib
        self._engine = engine
        self._cb = callback
        self._all_tokens = []
        self._all_bytes = bytearray()
        self._new_tokens = []
        self._new_bytes = bytearray()
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._tbuf = (c_int32 * self._TOKENS)()
        self._cbuf = ctypes.create_string_buffer(self._TEXT)
        callbacks, free_request = engine._dispatch.callbacks, self._lib.basalt_request_free

        def free(h):
            callbacks.pop(key, None)  # a late call of the engine's callback finds nothing
            free_request(h)

        self._own(handle, free)
        if callback is not None:
            callback.request = weakref.ref(self)

    # ---- state ----

    def _reason(self, h):
        return self._lib.basalt_request_finish_reason(h)

    @property
    def finish_reason(self):
        """None while queued or running, else "stop", "length", "context", "cancelled" or "error"."""
        r = self._reason(self._h)
        return self._lib.basalt_finish_reason_name(r).decode() if r != _capi.FINISH_NONE else None

    @property
    def error(self):
        """The message of a request that finished with "error", else None."""
        h = self._h
        if self._reason(h) != _capi.FINISH_ERROR:
            return None
        return self._lib.basalt_request_error(h).decode("utf-8", "replace")

    def cancel(self):
        """Cancels the request (queued or running); it finishes as "cancelled" at the next step. Idempotent."""
        _check(self._lib.basalt_request_cancel(self._h))

    def stats(self):
        """Figures as a dict: prompt_tokens, cached_tokens, generated_tokens, queue_ms, ttft_ms, total_ms,
        itl_mean_ms, itl_p50_ms, itl_p99_ms, itl_max_ms, tokens_per_s, and for encoder-decoder requests
        source_tokens and encode_ms (the request's share of its encoder pass, part of ttft_ms) (times in
        milliseconds, up to now while running)."""
        s = _capi.RequestStats()
        s.struct_size = ctypes.sizeof(s)
        _check(self._lib.basalt_request_stats_get(self._h, byref(s)))
        return {name: getattr(s, name) for name in _REQUEST_STATS}

    def itl(self):
        """The inter-token latencies (ms, in order) as a list."""
        h = self._h
        n = c_size_t()
        _check(self._lib.basalt_request_itl(h, None, 0, byref(n)))
        if n.value == 0:
            return []
        buf = (ctypes.c_double * n.value)()
        _check(self._lib.basalt_request_itl(h, buf, n.value, byref(n)))
        return list(buf[:n.value])

    def hypotheses(self):
        """The decoder's outputs as a list of dicts {"tokens", "text", "score"}: one for a plain request, the
        n-best (best first) for beam search. The first is the request's output (its text is the streamed text,
        stop strings applied); the others' text is their tokens detokenized. Drives or waits for the request."""
        self._drain()
        h, out = self._h, []
        for i in range(self._lib.basalt_request_n_hypotheses(h)):
            n, score = c_size_t(), ctypes.c_float()
            _check(self._lib.basalt_request_hypothesis(h, i, None, 0, byref(n), byref(score)))
            buf = (c_int32 * max(1, n.value))()
            _check(self._lib.basalt_request_hypothesis(h, i, buf, n.value, byref(n), byref(score)))
            toks = list(buf[:n.value])
            text = self._all_bytes.decode("utf-8", "replace") if i == 0 else self._engine._model.detokenize(toks)
            out.append({"tokens": toks, "text": text, "score": score.value})
        return out

    def logprobs(self):
        """The recorded log-probabilities (submit(logprobs=N)), one dict per emitted token of the output:
        {"token": id, "logprob": float, "top": [(id, logprob), ...] the N most likely, most likely first}. Natural
        logs under the model's raw distribution. Drives or waits for the request."""
        self._drain()
        h, out = self._h, []
        tok, lp, n_top = c_int32(), ctypes.c_float(), c_size_t()
        ids, lps = (c_int32 * 20)(), (ctypes.c_float * 20)()
        for i in range(self._lib.basalt_request_n_logprobs(h)):
            _check(self._lib.basalt_request_logprob(h, i, byref(tok), byref(lp), ids, lps, 20, byref(n_top)))
            out.append({"token": tok.value, "logprob": lp.value,
                        "top": [(ids[k], lps[k]) for k in range(min(20, n_top.value))]})
        return out

    def decoder_stats(self):
        """The figures the decoder recorded, as a dict (speculative: drafted, accepted, acceptance_rate,
        verify_steps, tokens_per_verify, k). Up to now while running."""
        h, out, i = self._h, {}, 0
        name, value = c_char_p(), ctypes.c_double()
        while self._lib.basalt_request_decoder_stat(h, i, byref(name), byref(value)) == _capi.OK:
            out[name.value.decode()] = value.value
            i += 1
        return out

    # ---- output ----

    def _raise_callback_error(self):
        cb = self._cb
        if cb is not None and cb.error is not None:
            e, cb.error = cb.error, None
            raise e

    def _pull(self, h):
        # Moves everything unread from C into the pending and the collected output.
        n, m = c_size_t(), c_size_t()
        while True:
            _check(self._lib.basalt_request_read(h, self._tbuf, self._TOKENS, byref(n), self._cbuf, self._TEXT,
                                                 byref(m)))
            if n.value:
                toks = self._tbuf[:n.value]
                self._all_tokens.extend(toks)
                self._new_tokens.extend(toks)
            if m.value:
                data = self._cbuf.raw[:m.value]
                self._all_bytes += data
                self._new_bytes += data
            # read backs off at most 3 bytes to keep a character whole: a shorter read took everything
            if n.value < self._TOKENS and m.value < self._TEXT - 3:
                return

    def _take(self, h):
        # (finished, tokens, text) of what is new; finished is read first, so a finished request is drained.
        finished = self._reason(h) != _capi.FINISH_NONE
        self._pull(h)
        toks, data = self._new_tokens, bytes(self._new_bytes)
        self._new_tokens = []
        self._new_bytes.clear()
        return finished, toks, self._decoder.decode(data, final=finished)

    def read(self):
        """What is new since the last read() or iteration step: (list of token ids, str)."""
        self._raise_callback_error()
        _, toks, text = self._take(self._h)
        return toks, text

    def _advance(self, h, timeout_ms=100):
        # Makes progress: steps a caller-driven engine, else waits for output of the engine's thread.
        if self._engine.own_thread:
            _check(self._lib.basalt_request_wait(h, timeout_ms))
        else:
            self._engine.step()

    def _raise_if_failed(self, h):
        if self._reason(h) == _capi.FINISH_ERROR:
            raise RequestError(self._lib.basalt_request_error(h).decode("utf-8", "replace"), self)

    def __iter__(self):
        while True:
            self._raise_callback_error()
            h = self._h
            finished, toks, text = self._take(h)
            if text:
                yield text
            if finished:
                break
            if not toks and not text:
                self._advance(h)
        self._raise_callback_error()
        self._raise_if_failed(self._h)

    def wait(self, timeout=None):
        """Drives (or waits for) the request until it finishes or timeout seconds pass (None: no limit); returns
        finish_reason. Output that arrives meanwhile is kept for read(), the iteration and text()."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._raise_callback_error()
            h = self._h
            if self._reason(h) != _capi.FINISH_NONE:
                break
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            self._pull(h)  # so the C wait blocks until there is more
            self._advance(h, 100 if left is None else max(1, min(100, int(left * 1000))))
        self._raise_callback_error()
        return self.finish_reason

    def _drain(self):
        for _ in self:
            pass

    def text(self):
        """All the generated text, once the request finished (drives or waits for it)."""
        self._drain()
        return self._all_bytes.decode("utf-8", "replace")

    def tokens(self):
        """All the generated token ids, once the request finished (drives or waits for it)."""
        self._drain()
        return list(self._all_tokens)


# ---- generation ----------------------------------------------------------------------------------------------------

_SESSION_ARGS = {"n_ctx": "ctx", "n_batch": "max_batch_tokens", "n_seq_max": "seq_max", "n_threads": "threads"}


def decoder_requirements(runtime, decoder):
    """What decoder ("NAME[:key=value,...]") needs for one request, as a dict: n_seq (cache sequences; an
    Engine's seq_max must allow them), n_models (2: it needs the Engine's second_model) and n_outputs (n-best).
    An unknown decoder or a refused parameter raises BasaltError naming it."""
    if not isinstance(runtime, Runtime):
        raise TypeError("decoder_requirements: runtime must be a basalt.Runtime")
    n = _capi.DecoderNeeds()
    n.struct_size = ctypes.sizeof(n)
    _check(_capi.lib().basalt_decoder_requirements(runtime._h, _text_bytes(decoder or "sample", "decoder"), byref(n)))
    return {"n_seq": n.n_seq, "n_models": n.n_models, "n_outputs": n.n_outputs}


def _generate(model, prompt, n_predict, samplers, runtime, engine, engine_args, decoder=None, draft=None,
              steer=None):
    """(tokens, text) of one request through an engine (the given one, or one made for the call)."""
    n_predict = _int(n_predict, "n_predict", 0)  # -1 used to return '' silently
    if isinstance(engine, Session):
        raise TypeError("generate no longer takes a Session: pass engine=basalt.Engine(runtime, model) or nothing")
    own = []
    try:
        if engine is not None:
            if engine_args:
                raise TypeError(f"engine parameters ({', '.join(engine_args)}) given with an engine")
            if model is not None and model is not engine._model:
                raise ValueError("with engine=, give the engine's Model (or None) as model")
            model = engine._model
        else:
            if runtime is None:
                runtime = model._runtime if isinstance(model, Model) and model._runtime else None
            if runtime is None:
                runtime = Runtime()
                own.append(runtime)
            if not isinstance(model, Model):
                model = Model(model, runtime)
                own.append(model)
            args = {_SESSION_ARGS.get(k, k): v for k, v in engine_args.items()}
            if decoder and "seq_max" not in args:  # beams: one cache sequence each
                args["seq_max"] = decoder_requirements(runtime, decoder)["n_seq"]
            if draft is not None:
                if not isinstance(draft, Model):
                    draft = Model(draft, runtime)
                    own.append(draft)
                args["second_model"] = draft
            engine = Engine(runtime, model, **args)
            own.append(engine)
        tokens = model.tokenize(prompt)
        if not tokens:
            raise ValueError("the prompt tokenizes to nothing")
        request = engine.submit(tokens=tokens, samplers=samplers, decoder=decoder, max_tokens=n_predict, steer=steer)
        own.append(request)
        return request.tokens(), request.text()
    finally:
        for obj in reversed(own):
            obj.close()


def generate_tokens(model, prompt, n_predict, samplers="greedy", runtime=None, engine=None, *, decoder=None,
                    draft=None, steer=None, **engine_args):
    """Generates up to n_predict tokens after prompt (stopping at an end-of-generation token or a full context)
    through an Engine and returns their ids. model: a Model or a path (or a shipped model's name); samplers: a
    chain text or a SamplerChain (its text; the chain object's state is not used). engine: an Engine to submit
    to (else one is made for the call, with engine_args: Engine's keywords, or Session's n_ctx, n_batch,
    n_seq_max, n_threads). decoder: "NAME[:key=value,...]" (beam:width=4, speculative:k=4, contrastive); draft:
    the second model (a Model or a path/shipped name) speculative and contrastive decoding need; the engine made
    for the call gets the sequences the decoder needs. steer: as Engine.submit's (a "FILE[:SCALE[:A-B]]" spec or
    a list). A prompt longer than the context raises BasaltError."""
    return _generate(model, prompt, n_predict, samplers, runtime, engine, engine_args, decoder, draft, steer)[0]


def generate(model, prompt, n_predict=32, samplers="greedy", runtime=None, engine=None, *, decoder=None, draft=None,
             steer=None, **engine_args):
    """Generates up to n_predict tokens after prompt and returns their text (the prompt not included), through an
    Engine as generate_tokens. samplers: a chain text, e.g. "top_k:40;top_p:0.9;temp:0.7;dist:seed=42". steer: a
    steering spec or a list (see Engine.submit)."""
    return _generate(model, prompt, n_predict, samplers, runtime, engine, engine_args, decoder, draft, steer)[1]
