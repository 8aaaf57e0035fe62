"""One request of an engine: its state, figures and streamed output (Request)."""
import codecs
import ctypes
import time
import weakref
from ctypes import byref, c_char_p, c_int32, c_size_t

from . import _capi
from ._lifetime import _Owned
from .errors import RequestError, _check


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

    def embedding(self):
        """The result of a finished embedding request (Engine.embed): a list of floats (pooling "none": every token's
        vector one after another; "rank": the rank head's scores). Drives or waits for the request; raises
        RequestError when it failed."""
        self.wait()
        h = self._h
        if self._reason(h) == _capi.FINISH_ERROR:
            raise RequestError(self._lib.basalt_request_error(h).decode("utf-8", "replace"))
        n = c_size_t()
        _check(self._lib.basalt_request_embedding(h, None, 0, byref(n)))
        buf = (ctypes.c_float * n.value)()
        _check(self._lib.basalt_request_embedding(h, buf, n.value, byref(n)))
        return list(buf)

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
