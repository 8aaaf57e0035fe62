"""A model file: its hyper-parameters and its tokenizer (Model)."""
import ctypes
from ctypes import byref, c_int32, c_size_t, c_void_p

from . import _capi
from ._convert import _ids, _int, _str, _text_bytes
from ._lifetime import _Owned
from .errors import _check


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
        self.rope_scaling = _str(info.rope_scaling) if info.rope_scaling else "none"  # what sessions apply, in words
        self.n_layer_recurrent = info.n_layer_recurrent  # layers with a recurrent state (0: sequences can be cut)
        n_dec = ctypes.c_uint32()
        _check(self._lib.basalt_model_decoder_layers(self._h, byref(n_dec)))
        self.n_layer_decoder = n_dec.value  # encoder-decoder models: the decoder's blocks (0: decoder-only)

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
