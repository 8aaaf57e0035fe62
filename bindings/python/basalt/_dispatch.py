"""Request callbacks: the one ctypes callback of an engine (_Dispatch) and the Python side of each request's
callback (_Callback).
"""
import codecs
import ctypes
import itertools
import threading

from . import _capi


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
