"""Sessions: a model on a backend with a KV cache, decoding batches and reading logits (Session), and the MoE
routing statistics a session or an engine reports.
"""
import ctypes
from ctypes import POINTER, byref, c_float, c_int8, c_size_t, c_uint8, c_uint32, c_void_p

from . import _capi
from ._components import _kv_types, _set_components
from ._convert import _ids, _u64
from ._lifetime import _Owned
from .errors import _check


class Session(_Owned):
    """A model on a backend with a KV cache, decoding batches of sequences (keeps its runtime and model
    alive). For generation use an Engine: it batches requests and runs the samplers and decoders."""

    def __init__(self, runtime, model, n_ctx=0, n_batch=0, n_seq_max=0, n_threads=0, backend=None, kv_cache=None,
                 device=None, backend_params=None, kv_params=None, moe_router=None, k_type=None, v_type=None,
                 kv_residual=None, state_checkpoint_bytes=0):
        """device: the backend's device index (None: its default); backend_params / kv_params: dicts of str
        parameters for the backend (e.g. {"isa": "avx2"}) and the KV cache manager (e.g. {"k_type": "q8_0"}).
        moe_router: MoE routing, "dropless" (None, the default) or "capacity:factor=C,overflow=drop|reroute"
        (docs/moe.md).
        kv_cache: a manager name or "NAME:key=value,..." (e.g. "sink:n_sink=4,window=252", a streaming cache that
        runs past the context: docs/kv-cache.md).
        k_type / v_type / kv_residual: the stored K and V types and the residual window (docs/kv-cache.md), the
        same as kv_params' "k_type", "v_type", "residual".
        state_checkpoint_bytes: a hybrid model's host memory for recurrent-state checkpoints at block
        boundaries, which the C API's basalt_session_prefix_attach needs to reuse a prefix (0: none kept;
        docs/kv-cache.md "Prefix reuse on a hybrid model")."""
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
        p.state_checkpoint_bytes = _u64("state_checkpoint_bytes", state_checkpoint_bytes)
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
        _check(self._lib.basalt_session_seq_truncate(self._h, seq_id, n_keep))

    def prefix_attach(self, tokens, seq_id=0):
        """Attaches to empty sequence seq_id the longest chain of cached full blocks holding a prefix of tokens
        (docs/kv-cache.md "Prefix caching"); returns how many tokens it now holds (decode the rest from there). A
        hybrid model attaches only as far as a kept state checkpoint (state_checkpoint_bytes; none: 0)."""
        n = len(tokens)
        tok = _ids(tokens, "prefix_attach: tokens") if n else None
        matched = c_size_t()
        _check(self._lib.basalt_session_prefix_attach(self._h, seq_id, tok, n, byref(matched)))
        return matched.value

    def seq_set_salt(self, seq_id, salt):
        """Sets an empty sequence's prefix-cache salt (an int, 0: none): its blocks and checkpoints match only
        sequences with the same salt. Forks keep it, a drop clears it."""
        _check(self._lib.basalt_session_seq_set_salt(self._h, seq_id, _u64("salt", salt)))

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


def _moe_stats(fn, handle, n_layer, n_expert):
    """The MoE routing statistics per layer as a list of dicts, read through fn (basalt_session_moe_stats or
    basalt_engine_moe_stats) on handle."""
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
