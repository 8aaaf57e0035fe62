"""One-call generation: generate() and generate_tokens() submit one request to an Engine (the given one, or one
made for the call), the loop `basalt run` uses, so the output is the same.
"""
from ._convert import _int
from .engine import Engine, decoder_requirements
from .model import Model
from .runtime import Runtime
from .session import Session


_SESSION_ARGS = {"n_ctx": "ctx", "n_batch": "max_batch_tokens", "n_seq_max": "seq_max", "n_threads": "threads"}


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
            if decoder and "seq_max" not in args:  # beams: one cache sequence each; a recurrent model's snapshots
                needs = decoder_requirements(runtime, decoder)
                args["seq_max"] = needs["n_seq"] + (needs["n_snapshot_seq"] if model.n_layer_recurrent else 0)
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
