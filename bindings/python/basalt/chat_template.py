"""Chat templates (ChatTemplate): a conversation rendered with a model's own Jinja template, or any other, by
libbasalt's sandboxed interpreter, byte for byte as Hugging Face's jinja2 setup renders it (docs/chat-templates.md).
"""
import ctypes
import json
from ctypes import byref, c_int32, c_size_t, c_void_p

from . import _capi
from ._lifetime import _Owned
from .errors import _check

PIECE_TEXT, PIECE_MARKUP, PIECE_CONTROL = 0, 1, 2


class ChatTemplate(_Owned):
    """A parsed Jinja chat template. ChatTemplate(source) parses source (BasaltError naming line:column for a
    syntax error); ChatTemplate.from_model(model) parses the model's tokenizer.chat_template."""

    def __init__(self, source):
        self._lib = _capi.lib()
        data = source.encode() if isinstance(source, str) else bytes(source)
        handle = c_void_p()
        _check(self._lib.basalt_chat_template_create(data, len(data), byref(handle)))
        self._own(handle, self._lib.basalt_chat_template_destroy)

    @classmethod
    def from_model(cls, model):
        """The model's own template (BasaltError when the file has none)."""
        out = ctypes.c_char_p()
        _check(_capi.lib().basalt_model_meta(model._h, b"tokenizer.chat_template", byref(out)))
        return cls(out.value)

    def render_pieces(self, messages, tools=None, add_generation_prompt=True, model=None, bos_token=None,
                      eos_token=None, now=None, **kwargs):
        """The rendering as (text, kind) pairs: PIECE_TEXT for the data passed in (message content, tools),
        PIECE_MARKUP for the template's own text, PIECE_CONTROL for markup spelling one special token of model.
        messages and tools take OpenAI's shapes; kwargs are further template variables (enable_thinking=False,
        reasoning_effort="low", ...); bos_token / eos_token default to model's; now fixes strftime_now's clock
        (UTC seconds). BasaltError naming line:column for the template's errors (raise_exception, limits)."""
        context = dict(kwargs)
        context["messages"] = list(messages)
        if tools is not None:
            context["tools"] = list(tools)
        context["add_generation_prompt"] = bool(add_generation_prompt)
        ctx = json.dumps(context, ensure_ascii=False).encode()
        p = _capi.ChatRenderParams()
        p.struct_size = ctypes.sizeof(p)
        p.context_json = ctx
        p.model = model._h if model is not None else None
        p.bos_token = bos_token.encode() if bos_token is not None else None
        p.eos_token = eos_token.encode() if eos_token is not None else None
        p.now_unix = int(now) if now is not None else 0
        prompt = c_void_p()
        _check(self._lib.basalt_chat_template_render(self._h, byref(p), byref(prompt)))
        try:
            n = c_size_t()
            ptr = self._lib.basalt_chat_prompt_text(prompt, byref(n))
            raw = ctypes.string_at(ptr, n.value)
            pieces = []
            off, length, kind = c_size_t(), c_size_t(), c_int32()
            for i in range(self._lib.basalt_chat_prompt_n_pieces(prompt)):
                _check(self._lib.basalt_chat_prompt_piece(prompt, i, byref(off), byref(length), byref(kind)))
                pieces.append((raw[off.value:off.value + length.value].decode("utf-8", "replace"), kind.value))
            return pieces
        finally:
            self._lib.basalt_chat_prompt_destroy(prompt)

    def render(self, messages, tools=None, add_generation_prompt=True, model=None, **kwargs):
        """The rendered prompt text (see render_pieces for the arguments)."""
        return "".join(t for t, _ in self.render_pieces(messages, tools, add_generation_prompt, model, **kwargs))
