"""The engine: the generation loop with its queue, continuous batching and decoders (Engine), and what a decoder
needs of one (decoder_requirements).
"""
import atexit
import ctypes
import json
import os
import threading
import weakref
from ctypes import POINTER, byref, c_char_p, c_size_t, c_void_p

from . import _capi
from ._components import _kv_types, _set_components
from ._convert import _c_string, _i32, _ids, _text_bytes, _u32, _u64
from ._dispatch import _Callback, _Dispatch
from ._lifetime import _Owned
from .errors import _check
from .request import Request
from .runtime import Runtime
from .samplers import SamplerChain
from .session import _moe_stats


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


def _grammar(grammar, json_schema, regex, json_object):
    """The (BASALT_GRAMMAR_* kind, NUL-free UTF-8 text or None) of submit's structured-output arguments."""
    given = [name for name, v in (("grammar", grammar), ("json_schema", json_schema), ("regex", regex),
                                  ("json_object", json_object or None)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"submit: give one of grammar, json_schema, regex and json_object, not {', '.join(given)}")
    if grammar is not None:
        return _capi.GRAMMAR_GBNF, _c_string(grammar, "submit: grammar")
    if json_schema is not None:
        if isinstance(json_schema, (dict, bool)):
            json_schema = json.dumps(json_schema)
        return _capi.GRAMMAR_JSON_SCHEMA, _c_string(json_schema, "submit: json_schema")
    if regex is not None:
        return _capi.GRAMMAR_REGEX, _c_string(regex, "submit: regex")
    if json_object:
        return _capi.GRAMMAR_JSON, None
    return _capi.GRAMMAR_NONE, None


class Engine(_Owned):
    """The generation loop (basalt_engine_*): a FIFO queue of requests and continuous batching. Each step packs
    the work of every running request (decode tokens first, then prefill chunks) into one ragged batch per
    model under a token budget; a request is admitted when a sequence and the KV blocks it needs now are free (the
    newest running ones are preempted and recomputed later when blocks run out; admission="reserve": admitted only
    when its worst-case KV room is free, never preempted).

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
    layer (moe_stats()). admission: "on-demand" (default) or "reserve" (docs/engine.md "Admission and
    preemption"; stats()["preemptions"] counts preemptions). max_step_ms: the step-time budget while requests decode (docs/engine.md): prompt pieces
    join a step only as far as its predicted time stays within it; 0: max_step_factor (0: 2) times the predicted
    time of the decode rows alone; a number > 0: that many ms; < 0: no budget. prefix_state_bytes: a hybrid
    model's prefix cache keeps checkpoints of the recurrent state at block boundaries in this much host memory (0:
    room for 16 states, or 2 per running request when that is more; docs/kv-cache.md "Prefix reuse on a hybrid
    model").

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
                 moe_stats=False, k_type=None, v_type=None, kv_residual=None, admission="on-demand",
                 max_step_ms=0.0, max_step_factor=0.0, prefix_state_bytes=0):
        kv_params = _kv_types(kv_params, k_type, v_type, kv_residual)
        if admission not in ("on-demand", "reserve"):
            raise ValueError(f"admission must be 'on-demand' or 'reserve', not {admission!r}")
        self._lib = _capi.lib()
        self._runtime = runtime
        self._model = model
        self._second_model = second_model
        self.own_thread = bool(own_thread)
        p = _capi.EngineParams()
        p.struct_size = ctypes.sizeof(p)
        p.flags = ((_capi.ENGINE_OWN_THREAD if own_thread else 0) |
                   (0 if prefix_cache else _capi.ENGINE_NO_PREFIX_CACHE) |
                   (_capi.ENGINE_MOE_STATS if moe_stats else 0) |
                   (_capi.ENGINE_ADMIT_RESERVE if admission == "reserve" else 0))
        p.n_ctx = _u32("ctx", ctx)
        p.n_parallel = _u32("parallel", parallel)
        p.n_seq_max = _u32("seq_max", seq_max)
        p.n_kv_slots = _u32("kv_slots", kv_slots)
        p.max_batch_tokens = _u32("max_batch_tokens", max_batch_tokens)
        p.prefill_chunk = _u32("prefill_chunk", prefill_chunk)
        p.n_threads = _u32("threads", threads)
        p.max_step_ms = float(max_step_ms)
        p.max_step_factor = float(max_step_factor)
        p.prefix_state_bytes = _u64("prefix_state_bytes", prefix_state_bytes)
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
               cache_salt=None, steer=None, source=None, source_tokens=None, logprobs=None, grammar=None,
               json_schema=None, regex=None, json_object=False):
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
        Structured output (docs/structured-output.md), at most one of: grammar (GBNF text, llama.cpp's dialect,
        start rule root), json_schema (a JSON Schema: a dict, or its JSON text), regex (the whole output matches
        it), json_object=True (any JSON object). A constraint that does not compile raises BasaltError naming the
        position or keyword.

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
            if len(src) == 0:
                raise ValueError("submit: source_tokens is empty: an encoder-decoder request needs at least one "
                                 "source token")
            keep.append(src)
            p.source_tokens = src
            p.n_source_tokens = len(source_tokens)
        elif source is not None:
            data = _c_string(source, "submit: source") + b"\0"
            keep.append(data)
            p.source = data
        if isinstance(samplers, SamplerChain):
            samplers = samplers.spec
        p.samplers = _c_string(samplers, "submit: samplers") if samplers is not None else None
        p.decoder = _c_string(decoder, "submit: decoder") if decoder else None
        if cache_salt is not None:
            salt = _c_string(cache_salt, "submit: cache_salt")
            keep.append(salt)
            p.cache_salt = salt
        if steer is not None:
            if isinstance(steer, (str, bytes, os.PathLike)):
                steer = [steer]
            specs = [_c_string(os.fsencode(s), f"submit: steer[{i}]") for i, s in enumerate(steer)]
            if specs:
                arr = (c_char_p * len(specs))(*specs)
                keep.extend([specs, arr])
                p.steer = ctypes.cast(arr, POINTER(c_char_p))
                p.n_steer = len(specs)
        kind, text = _grammar(grammar, json_schema, regex, json_object)
        if kind != _capi.GRAMMAR_NONE:
            if text is not None:
                keep.append(text)
                p.grammar = text
            p.grammar_kind = kind
        p.max_tokens = _i32("max_tokens", max_tokens)
        seed = int(seed)
        if not -0x8000000000000000 <= seed <= 0x7FFFFFFFFFFFFFFF:
            raise ValueError(f"seed = {seed} is out of the int64 range")
        p.seed = seed
        if isinstance(stop, (str, bytes)):
            stop = [stop]
        stops = [_c_string(s, f"submit: stop[{i}]") for i, s in enumerate(stop)]
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

    def embed(self, inputs, *, pooling=None, normalize=True, dimensions=0, add_special=True):
        """Embeds inputs with an embedding model (docs/embeddings.md) and returns the vectors.

        inputs: one input (a str, UTF-8 bytes, or a list of token ids) -> one vector (a list of floats); or a list
        or tuple of inputs -> a list of vectors in order. Every input is one embedding request, all submitted
        before the engine runs, so they share its batches (ragged, no padding) with any other requests. pooling:
        None (the model's <arch>.pooling_type), "none" (a vector per token, one after another), "mean", "cls",
        "last" or "rank" (the rank head's scores). normalize: L2 (True, the default) or as the model gives them.
        dimensions: keep the first N values before normalising (0: all). A refused input raises BasaltError
        naming it (an input past the context, a model that cannot embed); a failed one RequestError."""
        single = isinstance(inputs, (str, bytes)) or (isinstance(inputs, (list, tuple)) and len(inputs) > 0 and
                                                       isinstance(inputs[0], int))
        items = [inputs] if single else list(inputs)
        pool = "model" if pooling is None else pooling
        if pool not in _capi.POOLINGS:
            raise ValueError(f"embed: pooling {pooling!r} is not one of none, mean, cls, last, rank (or None)")
        requests = []
        try:
            for i, item in enumerate(items):
                p = _capi.RequestParams()
                p.struct_size = ctypes.sizeof(p)
                p.flags = _capi.REQUEST_EMBED | (0 if add_special else _capi.REQUEST_NO_SPECIAL)
                if isinstance(item, (str, bytes)):
                    data = _text_bytes(item, f"embed: input {i}")
                    p.prompt, p.prompt_len = data, len(data)
                else:
                    ids = _ids(item, f"embed: input {i}")
                    p.tokens, p.n_tokens = ids, len(item)
                p.max_tokens = -1
                p.seed = -1
                p.pooling = _capi.POOLINGS[pool]
                p.normalize = _capi.NORMALIZE_L2 if normalize else _capi.NORMALIZE_NONE
                p.dimensions = _u32("dimensions", dimensions)
                out = c_void_p()
                st = self._lib.basalt_engine_submit(self._h, byref(p), byref(out))
                if st != _capi.OK:
                    _check(st)
                requests.append(Request(self, out))
            vectors = [r.embedding() for r in requests]
        finally:
            for r in requests:
                r.close()
        return vectors[0] if single else vectors

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

    def add_control_vector(self, name, spec):
        """Loads the control vector spec "FILE[:SCALE[:A-B]]" now and keeps it under `name`: a request's
        steer="NAME[:SCALE[:A-B]]" then uses it and opens no file. Raises BasaltError naming a refused file or name.
        Thread-safe."""
        _check(self._lib.basalt_engine_add_control_vector(self._h, _text_bytes(name, "add_control_vector: name"),
                                                          _text_bytes(spec, "add_control_vector: spec")))

    def stats(self):
        """Engine-wide counters: steps, queued, running, finished, prompt_tokens, generated_tokens,
        batch_tokens_max, kv_slots, kv_slots_free, cached_tokens (prompt tokens reused from the prefix cache),
        preemptions (running requests whose K/V was dropped for older ones and recomputed later),
        state_checkpoints and state_checkpoint_bytes (a hybrid model's recurrent-state checkpoints kept now)."""
        s = _capi.EngineStats()
        s.struct_size = ctypes.sizeof(s)
        _check(self._lib.basalt_engine_stats_get(self._h, byref(s)))
        return {name: getattr(s, name) for name, _ in _capi.EngineStats._fields_[2:]}

    def moe_stats(self):
        """The main model's MoE routing statistics per layer as of the last step (the engine must be created with
        moe_stats=True): a list of dicts as Session.moe_stats()."""
        return _moe_stats(self._lib.basalt_engine_moe_stats, self._h, self._model.n_layer,
                          self._model.n_expert)


def decoder_requirements(runtime, decoder):
    """What decoder ("NAME[:key=value,...]") needs for one request, as a dict: n_seq (cache sequences; an
    Engine's seq_max must allow them), n_models (2: it needs the Engine's second_model), n_outputs (n-best) and
    n_snapshot_seq (more sequences on a model with a recurrent state, Model.n_layer_recurrent > 0: speculative
    decoding's snapshots). An unknown decoder or a refused parameter raises BasaltError naming it."""
    if not isinstance(runtime, Runtime):
        raise TypeError("decoder_requirements: runtime must be a basalt.Runtime")
    n = _capi.DecoderNeeds()
    n.struct_size = ctypes.sizeof(n)
    _check(_capi.lib().basalt_decoder_requirements(runtime._h, _text_bytes(decoder or "sample", "decoder"), byref(n)))
    return {"n_seq": n.n_seq, "n_models": n.n_models, "n_outputs": n.n_outputs, "n_snapshot_seq": n.n_snapshot_seq}
