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
whole. Errors of the library raise BasaltError with its status and message; RequestError and SamplerError
are BasaltErrors too (errors.py).

libbasalt is found through $BASALT_LIBRARY, else relative to this package (see _capi.find_library).

The package is split by concern; this file only re-exports (each name below is basalt.NAME):
    errors.py      BasaltError, RequestError, SamplerError: one hierarchy rooted at BasaltError
    runtime.py     Runtime (plugins, registration of Python samplers), version(), library_path()
    model.py       Model: hyper-parameters and tokenizer
    session.py     Session: decode batches, logits, sequences, steering, MoE statistics
    samplers.py    SamplerChain; Sampler and Candidates (samplers written in Python)
    engine.py      Engine (queue, continuous batching, decoders), decoder_requirements()
    request.py     Request: an engine request's state, figures and streamed output
    generation.py  generate(), generate_tokens()
    _capi.py       the ctypes declarations of the C API and the loader of libbasalt
    private:       _lifetime.py (handle ownership), _convert.py (checked arguments), _components.py (the
                   backend/KV-cache params of sessions and engines), _dispatch.py (request callbacks)
"""
from . import _capi  # noqa: F401 -- basalt._capi: the C declarations (the tests pin their layouts)
from ._capi import SAMPLER_ARGMAX_INVARIANT, SAMPLER_DRAFT_SAFE, SAMPLER_SELECTS, TokenData
from .chat_template import ChatTemplate
from .engine import Engine, decoder_requirements
from .errors import BasaltError, RequestError, SamplerError
from .generation import generate, generate_tokens
from .model import Model
from .request import Request
from .runtime import Runtime, library_path, version
from .samplers import Candidates, Sampler, SamplerChain
from .session import Session

__all__ = [
    "BasaltError", "RequestError", "Runtime", "Model", "ChatTemplate", "Session", "SamplerChain", "Engine", "Request", "Sampler",
    "SamplerError", "Candidates", "generate", "generate_tokens", "decoder_requirements", "version", "library_path",
    "SAMPLER_ARGMAX_INVARIANT", "SAMPLER_DRAFT_SAFE", "SAMPLER_SELECTS", "TokenData"
]

