"""ctypes declarations of the Basalt C API (abi/include/basalt/basalt.h) and the loader of libbasalt.

Struct layouts mirror the C headers field for field (LP64); tests/test-abi-layout.cpp pins the C side and
bindings/python/tests checks these against the same numbers.
"""
import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_float, c_int8, c_int32, c_int64,
                    c_size_t, c_uint8, c_uint32, c_uint64, c_void_p)

# ---- status codes, flags (common.h, basalt.h, plugin_sampler.h, plugin_decoder.h) ------------------------------------

OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_OUT_OF_MEMORY = 2
ERR_NOT_FOUND = 3
ERR_IO = 4
ERR_FORMAT = 5
ERR_UNSUPPORTED = 6
ERR_ABI_MISMATCH = 7
ERR_PLUGIN = 8
ERR_DUPLICATE = 9
ERR_CAPACITY = 10
ERR_BACKEND = 11
ERR_CANCELLED = 12
ERR_INTERNAL = 13

COMPONENT_BACKEND = 1
COMPONENT_KV_CACHE = 2
COMPONENT_SAMPLER = 3
COMPONENT_DECODER = 4
COMPONENT_STEERING = 5

RUNTIME_NO_DEFAULT_PLUGINS = 1 << 0
RUNTIME_NO_ENV_PLUGINS = 1 << 1

SAMPLER_ARGMAX_INVARIANT = 1 << 0
SAMPLER_DRAFT_SAFE = 1 << 1
SAMPLER_SELECTS = 1 << 2

TOKENIZE_ADD_SPECIAL = 1 << 0
TOKENIZE_PARSE_SPECIAL = 1 << 1
DETOKENIZE_REMOVE_SPECIAL = 1 << 0
DETOKENIZE_UNPARSE_SPECIAL = 1 << 1

ENGINE_OWN_THREAD = 1 << 0
ENGINE_NO_PREFIX_CACHE = 1 << 1
ENGINE_MOE_STATS = 1 << 2  # since 1.4
ENGINE_ADMIT_RESERVE = 1 << 3  # since 1.7
REQUEST_NO_SPECIAL = 1 << 0
REQUEST_PARSE_SPECIAL = 1 << 1
REQUEST_IGNORE_EOG = 1 << 2
REQUEST_LOGPROBS = 1 << 3  # since 1.4
REQUEST_EMBED = 1 << 4  # since 1.4
# BASALT_GRAMMAR_*, since 1.5: how RequestParams.grammar is read
GRAMMAR_NONE, GRAMMAR_GBNF, GRAMMAR_JSON_SCHEMA, GRAMMAR_REGEX, GRAMMAR_JSON, GRAMMAR_GBNF_SCHEMAS = 0, 1, 2, 3, 4, 5
POOLINGS = {"model": 0, "none": 1, "mean": 2, "cls": 3, "last": 4, "rank": 5}  # BASALT_POOLING_*, since 1.4
NORMALIZE_L2, NORMALIZE_NONE = 0, 1  # since 1.4

FINISH_NONE = 0  # plugin_decoder.h: BASALT_FINISH_*
FINISH_STOP = 1
FINISH_LENGTH = 2
FINISH_CONTEXT = 3
FINISH_CANCELLED = 4
FINISH_ERROR = 5


# ---- structs -------------------------------------------------------------------------------------------------------

class Params(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved0", c_uint32), ("count", c_size_t),
                ("keys", POINTER(c_char_p)), ("values", POINTER(c_char_p))]


class TokenData(Structure):
    _fields_ = [("id", c_int32), ("logit", c_float), ("p", c_float)]


class Candidates(Structure):
    _fields_ = [("struct_size", c_uint32), ("seq_id", c_int32), ("data", POINTER(TokenData)), ("size", c_size_t),
                ("selected", c_int64), ("sorted", c_int32), ("probs_valid", c_int32)]


class Batch(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved0", c_uint32), ("n_tokens", c_size_t),
                ("tokens", POINTER(c_int32)), ("positions", POINTER(c_int32)), ("seq_ids", POINTER(c_int32)),
                ("want_logits", POINTER(c_int8))]


class RuntimeParams(Structure):
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32)]


class ComponentInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("name", c_char_p), ("description", c_char_p),
                ("version_major", c_uint32), ("version_minor", c_uint32), ("version_patch", c_uint32),
                ("plugin_abi_major", c_uint32), ("plugin_abi_minor", c_uint32), ("reserved0", c_uint32),
                ("plugin_name", c_char_p), ("file", c_char_p)]


class SessionParams(Structure):
    _fields_ = [("struct_size", c_uint32), ("n_ctx", c_uint32), ("n_batch", c_uint32), ("n_seq_max", c_uint32),
                ("n_threads", c_uint32), ("reserved0", c_uint32), ("backend", c_char_p), ("kv_cache", c_char_p),
                ("backend_params", POINTER(Params)), ("kv_params", POINTER(Params)),
                ("moe_router", c_char_p),  # since 1.4
                ("state_checkpoint_bytes", c_uint64)]  # since 1.9


class SpecialTokens(Structure):
    _fields_ = [("struct_size", c_uint32), ("bos", c_int32), ("eos", c_int32), ("eot", c_int32), ("unk", c_int32),
                ("pad", c_int32), ("sep", c_int32), ("nl", c_int32), ("add_bos", c_int32), ("add_eos", c_int32)]


class ModelInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("gguf_version", c_uint32), ("arch", c_char_p), ("name", c_char_p),
                ("n_layer", c_uint32), ("n_embd", c_uint32), ("n_head", c_uint32), ("n_head_kv", c_uint32),
                ("head_dim_k", c_uint32), ("head_dim_v", c_uint32), ("n_ff", c_uint32), ("n_ctx_train", c_uint32),
                ("n_vocab", c_uint32), ("n_expert", c_uint32), ("n_expert_used", c_uint32),
                ("sliding_window", c_uint32), ("n_params", c_uint64), ("weight_bytes", c_uint64),
                ("file_bytes", c_uint64), ("n_tensors", c_uint32), ("supported", c_int32),
                ("pooling", c_int32), ("n_cls_out", c_uint32),  # since 1.4
                ("rope_scaling", c_char_p),  # since 1.4
                ("n_layer_recurrent", c_uint32), ("reserved0", c_uint32)]  # since 1.8


class EngineParams(Structure):
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32), ("n_ctx", c_uint32), ("n_parallel", c_uint32),
                ("n_seq_max", c_uint32), ("n_kv_slots", c_uint32), ("max_batch_tokens", c_uint32),
                ("prefill_chunk", c_uint32), ("n_threads", c_uint32), ("reserved0", c_uint32), ("backend", c_char_p),
                ("kv_cache", c_char_p), ("backend_params", POINTER(Params)), ("kv_params", POINTER(Params)),
                ("second_model", c_void_p),
                ("moe_router", c_char_p),  # since 1.4
                ("max_step_ms", c_double), ("max_step_factor", c_double),  # since 1.7
                ("prefix_state_bytes", c_uint64)]  # since 1.9


class MoeStats(Structure):  # since 1.4
    _fields_ = [("struct_size", c_uint32), ("n_expert", c_uint32), ("passes", c_uint64), ("tokens", c_uint64),
                ("assignments", c_uint64), ("dropped", c_uint64), ("rerouted", c_uint64), ("imbalance", c_double)]


# request, tokens, n_tokens, text (not NUL-terminated), text_len, finish_reason, user_data
RequestCallbackFn = CFUNCTYPE(None, c_void_p, POINTER(c_int32), c_size_t, c_void_p, c_size_t, c_int32, c_void_p)


class RequestParams(Structure):
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32), ("prompt", c_char_p), ("prompt_len", c_size_t),
                ("tokens", POINTER(c_int32)), ("n_tokens", c_size_t), ("samplers", c_char_p), ("decoder", c_char_p),
                ("max_tokens", c_int32), ("reserved0", c_int32), ("seed", c_int64),
                ("stop_tokens", POINTER(c_int32)), ("n_stop_tokens", c_size_t), ("stop", POINTER(c_char_p)),
                ("n_stop", c_size_t), ("callback", RequestCallbackFn), ("user_data", c_void_p),
                ("cache_salt", c_char_p),
                ("steer", POINTER(c_char_p)), ("n_steer", c_size_t),  # since 1.3
                ("source", c_char_p), ("source_tokens", POINTER(c_int32)), ("n_source_tokens", c_size_t),  # 1.4
                ("n_top_logprobs", c_int32), ("reserved1", c_int32),  # 1.4
                ("pooling", c_int32), ("normalize", c_int32), ("dimensions", c_uint32), ("reserved2", c_uint32),
                ("grammar", c_char_p), ("grammar_kind", c_int32), ("reserved3", c_int32)]  # since 1.5


class DecoderNeeds(Structure):
    _fields_ = [("struct_size", c_uint32), ("n_seq", c_uint32), ("n_models", c_uint32), ("n_outputs", c_uint32),
                ("n_snapshot_seq", c_uint32), ("reserved0", c_uint32)]  # since 1.8


class RequestStats(Structure):
    _fields_ = [("struct_size", c_uint32), ("finish_reason", c_int32), ("prompt_tokens", c_uint64),
                ("cached_tokens", c_uint64), ("generated_tokens", c_uint64), ("queue_ms", c_double),
                ("ttft_ms", c_double), ("total_ms", c_double), ("itl_mean_ms", c_double), ("itl_p50_ms", c_double),
                ("itl_p99_ms", c_double), ("itl_max_ms", c_double), ("tokens_per_s", c_double),
                ("source_tokens", c_uint64), ("encode_ms", c_double)]  # since 1.4


class EngineStats(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved0", c_uint32), ("steps", c_uint64), ("queued", c_uint64),
                ("running", c_uint64), ("finished", c_uint64), ("prompt_tokens", c_uint64),
                ("generated_tokens", c_uint64), ("batch_tokens_max", c_uint64), ("kv_slots", c_uint64),
                ("kv_slots_free", c_uint64), ("cached_tokens", c_uint64), ("preemptions", c_uint64),
                ("state_checkpoints", c_uint64), ("state_checkpoint_bytes", c_uint64)]  # since 1.9


HostLogFn = CFUNCTYPE(None, c_void_p, c_int32, c_char_p, c_char_p)
HostSetErrorFn = CFUNCTYPE(None, c_void_p, c_int32, c_char_p)
HostAllocFn = CFUNCTYPE(c_void_p, c_void_p, c_size_t, c_size_t)
HostFreeFn = CFUNCTYPE(None, c_void_p, c_void_p)


class Host(Structure):
    _fields_ = [("struct_size", c_uint32), ("abi_major", c_uint32), ("abi_minor", c_uint32), ("reserved0", c_uint32),
                ("ctx", c_void_p), ("log", HostLogFn), ("set_error", HostSetErrorFn), ("alloc", HostAllocFn),
                ("free", HostFreeFn)]


SamplerCreateFn = CFUNCTYPE(c_int32, POINTER(Host), POINTER(Params), POINTER(c_void_p))
SamplerDestroyFn = CFUNCTYPE(None, c_void_p)
SamplerApplyFn = CFUNCTYPE(c_int32, POINTER(c_void_p), POINTER(POINTER(Candidates)), c_size_t)
SamplerAcceptFn = CFUNCTYPE(c_int32, c_void_p, c_int32)
SamplerResetFn = CFUNCTYPE(c_int32, c_void_p)
SamplerCloneFn = CFUNCTYPE(c_int32, c_void_p, POINTER(c_void_p))


class SamplerIface(Structure):
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32), ("create", SamplerCreateFn),
                ("destroy", SamplerDestroyFn), ("apply", SamplerApplyFn), ("accept", SamplerAcceptFn),
                ("reset", SamplerResetFn), ("clone", SamplerCloneFn)]


# ---- the library ---------------------------------------------------------------------------------------------------

_SONAME = "libbasalt.so.1"


class ChatRenderParams(Structure):  # since 1.4
    _fields_ = [("struct_size", c_uint32), ("max_depth", c_uint32), ("context_json", c_char_p), ("model", c_void_p),
                ("bos_token", c_char_p), ("eos_token", c_char_p), ("now_unix", c_int64), ("max_steps", c_uint64),
                ("max_output_bytes", c_uint64), ("max_ms", c_uint32), ("reserved0", c_uint32)]


def find_library():
    """Where libbasalt is loaded from: $BASALT_LIBRARY; else the library of the tree this package lies in
    (<prefix>/lib/python3/dist-packages/basalt -> <prefix>/lib/libbasalt.so.1; the build tree mirrors that
    layout under build/lib); else the system loader's search (ld.so.conf, LD_LIBRARY_PATH)."""
    env = os.environ.get("BASALT_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.normpath(os.path.join(here, os.pardir, os.pardir, os.pardir, _SONAME))
    if os.path.exists(beside):
        return beside
    return ctypes.util.find_library("basalt") or _SONAME


_lib = None


def _declare(lib):
    def fn(name, restype, *argtypes):
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = list(argtypes)

    st = c_int32
    P = POINTER
    fn("basalt_version_string", c_char_p)
    fn("basalt_abi_version", None, P(c_uint32), P(c_uint32))
    fn("basalt_last_error", c_char_p)
    fn("basalt_status_name", c_char_p, st)
    fn("basalt_default_plugin_dir", c_char_p)
    fn("basalt_runtime_create", st, P(RuntimeParams), P(c_void_p))
    fn("basalt_runtime_destroy", None, c_void_p)
    fn("basalt_runtime_load_plugin", st, c_void_p, c_char_p)
    fn("basalt_runtime_component_count", c_size_t, c_void_p)
    fn("basalt_runtime_component_info", st, c_void_p, c_size_t, P(ComponentInfo))
    fn("basalt_runtime_register_sampler", st, c_void_p, c_char_p, P(SamplerIface))
    fn("basalt_sampler_chain_create", st, c_void_p, c_char_p, P(c_void_p))
    fn("basalt_sampler_chain_destroy", None, c_void_p)
    fn("basalt_sampler_chain_sample", st, c_void_p, P(c_float), c_size_t, P(c_int32))
    fn("basalt_sampler_chain_apply", st, c_void_p, P(Candidates))
    fn("basalt_sampler_chain_accept", st, c_void_p, c_int32)
    fn("basalt_sampler_chain_reset", st, c_void_p)
    fn("basalt_sampler_chain_clone", st, c_void_p, P(c_void_p))
    fn("basalt_sampler_chain_length", c_size_t, c_void_p)
    fn("basalt_sampler_chain_name", c_char_p, c_void_p, c_size_t)
    fn("basalt_model_load", st, c_void_p, c_char_p, c_void_p, P(c_void_p))
    fn("basalt_model_free", None, c_void_p)
    fn("basalt_model_describe", st, c_void_p, P(ModelInfo))
    fn("basalt_model_decoder_layers", st, c_void_p, P(ctypes.c_uint32))
    fn("basalt_model_special_tokens", st, c_void_p, P(SpecialTokens))
    fn("basalt_token_is_eog", c_int32, c_void_p, c_int32)
    fn("basalt_tokenize", st, c_void_p, c_char_p, c_size_t, c_uint32, P(c_int32), c_size_t, P(c_size_t))
    fn("basalt_detokenize", st, c_void_p, P(c_int32), c_size_t, c_uint32, c_char_p, c_size_t, P(c_size_t))
    fn("basalt_token_to_piece", st, c_void_p, c_int32, c_int32, c_char_p, c_size_t, P(c_size_t))
    fn("basalt_session_create", st, c_void_p, c_void_p, P(SessionParams), P(c_void_p))
    fn("basalt_session_free", None, c_void_p)
    fn("basalt_session_decode", st, c_void_p, P(Batch))
    fn("basalt_session_encode", st, c_void_p, P(Batch))  # since 1.4
    fn("basalt_session_n_outputs", c_size_t, c_void_p)
    fn("basalt_session_logits", st, c_void_p, c_size_t, P(P(c_float)))
    fn("basalt_session_n_vocab", c_size_t, c_void_p)
    fn("basalt_session_n_ctx", c_uint32, c_void_p)
    fn("basalt_session_seq_length", st, c_void_p, c_int32, P(c_uint32))
    fn("basalt_session_seq_drop", st, c_void_p, c_int32)
    fn("basalt_session_seq_fork", st, c_void_p, c_int32, c_int32)
    fn("basalt_engine_create", st, c_void_p, c_void_p, P(EngineParams), P(c_void_p))
    fn("basalt_engine_destroy", None, c_void_p)
    fn("basalt_engine_submit", st, c_void_p, P(RequestParams), P(c_void_p))
    fn("basalt_engine_add_control_vector", st, c_void_p, c_char_p, c_char_p)
    fn("basalt_engine_step", st, c_void_p, P(c_size_t))
    fn("basalt_engine_run", st, c_void_p)
    fn("basalt_engine_stats_get", st, c_void_p, P(EngineStats))
    fn("basalt_request_cancel", st, c_void_p)
    fn("basalt_request_free", None, c_void_p)
    fn("basalt_request_finish_reason", c_int32, c_void_p)
    fn("basalt_finish_reason_name", c_char_p, c_int32)
    fn("basalt_request_error", c_char_p, c_void_p)
    fn("basalt_request_read", st, c_void_p, P(c_int32), c_size_t, P(c_size_t), c_void_p, c_size_t, P(c_size_t))
    fn("basalt_request_wait", st, c_void_p, c_int32)
    fn("basalt_request_stats_get", st, c_void_p, P(RequestStats))
    fn("basalt_request_itl", st, c_void_p, P(c_double), c_size_t, P(c_size_t))
    fn("basalt_request_n_hypotheses", c_size_t, c_void_p)
    fn("basalt_request_hypothesis", st, c_void_p, c_size_t, P(c_int32), c_size_t, P(c_size_t), P(c_float))
    fn("basalt_request_decoder_stat", st, c_void_p, c_size_t, P(c_char_p), P(c_double))
    fn("basalt_request_n_logprobs", c_size_t, c_void_p)  # since 1.4
    fn("basalt_request_logprob", st, c_void_p, c_size_t, P(c_int32), P(c_float), P(c_int32), P(c_float), c_size_t,
       P(c_size_t))  # since 1.4
    fn("basalt_request_embedding", st, c_void_p, P(c_float), c_size_t, P(c_size_t))  # since 1.4
    fn("basalt_decoder_requirements", st, c_void_p, c_char_p, P(DecoderNeeds))
    fn("basalt_session_seq_truncate", st, c_void_p, c_int32, c_uint32)
    fn("basalt_session_prefix_attach", st, c_void_p, c_int32, P(c_int32), c_size_t, P(c_size_t))
    fn("basalt_session_seq_set_salt", st, c_void_p, c_int32, c_uint64)  # since 1.2
    fn("basalt_session_seq_set_steering", st, c_void_p, c_int32, POINTER(c_float), POINTER(c_uint8), c_uint32,
       c_uint32)  # since 1.3
    fn("basalt_session_set_moe_stats", st, c_void_p, c_int32)  # since 1.4
    fn("basalt_session_moe_stats", st, c_void_p, c_uint32, P(MoeStats), P(c_uint64), c_size_t)  # since 1.4
    fn("basalt_engine_moe_stats", st, c_void_p, c_uint32, P(MoeStats), P(c_uint64), c_size_t)  # since 1.4
    fn("basalt_chat_template_create", st, c_char_p, c_size_t, P(c_void_p))  # since 1.4
    fn("basalt_chat_template_destroy", None, c_void_p)  # since 1.4
    fn("basalt_chat_template_render", st, c_void_p, P(ChatRenderParams), P(c_void_p))  # since 1.4
    fn("basalt_chat_prompt_text", c_void_p, c_void_p, P(c_size_t))  # since 1.4
    fn("basalt_chat_prompt_n_pieces", c_size_t, c_void_p)  # since 1.4
    fn("basalt_chat_prompt_piece", st, c_void_p, c_size_t, P(c_size_t), P(c_size_t), P(c_int32))  # since 1.4
    fn("basalt_chat_prompt_destroy", None, c_void_p)  # since 1.4


def lib():
    """The loaded libbasalt (loaded on first use, see find_library)."""
    global _lib
    if _lib is None:
        path = find_library()
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            raise OSError(f"cannot load libbasalt from '{path}': {e} (set BASALT_LIBRARY to its path)") from e
        _declare(loaded)
        loaded.basalt_library_path = path
        _lib = loaded
    return _lib
