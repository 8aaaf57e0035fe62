# make-model --shape tiny must write a GGUF that loads, inspects, and runs through `basalt eval`; an unknown
# shape must fail.
execute_process(COMMAND ${MAKE} --shape tiny --type q8_0 -o ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make-model failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} inspect --json ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
string(JSON layers ERROR_VARIABLE jerr GET "${o}" hparams n_layer)
if(NOT rc EQUAL 0 OR jerr OR NOT layers EQUAL 2)
  message(FATAL_ERROR "inspect of the made model failed (${rc}, ${jerr}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} eval -m ${OUT} --tokens 1,2,3,4 RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "pos 3 token 4 -> argmax")
  message(FATAL_ERROR "eval of the made model failed (${rc}): ${o}${e}")
endif()
# The file carries the shipped model's tokenizer padded to the shape's vocabulary (tiny: 2048 pieces + 512 unused), so
# `basalt run` (and llama.cpp, which refuses a GGUF without tokenizer.ggml.model) can use it unchanged.
execute_process(COMMAND ${EXE} run -m ${OUT} -p hi -n 4 RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT e MATCHES "generated 4 tokens")
  message(FATAL_ERROR "run of the made model failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} tokenize -m ${OUT} "Once upon a time" RESULT_VARIABLE rc OUTPUT_VARIABLE made ERROR_VARIABLE e)
execute_process(COMMAND ${EXE} tokenize -m target "Once upon a time" RESULT_VARIABLE rc2 OUTPUT_VARIABLE shipped)
if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT made STREQUAL shipped OR NOT made MATCHES "^1,")
  message(FATAL_ERROR "the made model does not tokenize as the shipped target: '${made}' vs '${shipped}' (${rc}): ${e}")
endif()
execute_process(COMMAND ${EXE} inspect --json ${OUT} OUTPUT_VARIABLE o)
string(JSON vocab ERROR_VARIABLE jerr GET "${o}" hparams n_vocab)
if(jerr OR NOT vocab EQUAL 2560)
  message(FATAL_ERROR "the made model's vocabulary is ${vocab}, expected 2560 (${jerr})")
endif()
execute_process(COMMAND ${EXE} detokenize -m ${OUT} --special 2047,2048,2559 RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "detokenize of the padding failed (${rc}): ${o}${e}")
endif()
# A vocabulary source that does not exist fails naming it, and writes nothing.
execute_process(COMMAND ${MAKE} --shape tiny --type q8_0 --vocab no-such-vocab -o ${OUT}.bad RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 1 OR NOT e MATCHES "cannot read the vocabulary of 'no-such-vocab'" OR EXISTS ${OUT}.bad)
  message(FATAL_ERROR "make-model --vocab no-such-vocab: rc ${rc}, ${o}${e}")
endif()
# An unknown shape fails naming it, with the usage line, which lists every shape it knows.
execute_process(COMMAND ${MAKE} --shape no-such-shape --type q8_0 -o ${OUT}.bad RESULT_VARIABLE rc OUTPUT_VARIABLE o
                ERROR_VARIABLE e)
if(rc EQUAL 0 OR NOT e MATCHES "unknown shape 'no-such-shape'"
   OR NOT e MATCHES "smollm2-135m\\|smollm2-360m\\|tinyllama-1.1b\\|tiny")
  message(FATAL_ERROR "make-model with an unknown shape: rc ${rc}, ${o}${e}")
endif()
if(EXISTS ${OUT}.bad)
  message(FATAL_ERROR "make-model with an unknown shape wrote ${OUT}.bad")
endif()
# A seed that is not a number fails naming it (no uncaught exception).
execute_process(COMMAND ${MAKE} --shape tiny --type q8_0 --seed 12x -o ${OUT}.bad RESULT_VARIABLE rc OUTPUT_VARIABLE o
                ERROR_VARIABLE e)
if(NOT rc EQUAL 2 OR NOT e MATCHES "--seed wants a non-negative integer, not '12x'" OR EXISTS ${OUT}.bad)
  message(FATAL_ERROR "make-model with a bad seed: rc ${rc}, ${o}${e}")
endif()
# A type whose blocks do not divide the shape's rows (tiny's 64 columns, q4_k's 256) fails naming the tensor,
# the row and the block, and writes nothing.
execute_process(COMMAND ${MAKE} --shape tiny --type q4_k -o ${OUT}.bad RESULT_VARIABLE rc OUTPUT_VARIABLE o
                ERROR_VARIABLE e)
if(NOT rc EQUAL 1 OR NOT e MATCHES "tensor 'token_embd.weight': rows of 64 elements are not whole q4_k blocks of 256"
   OR EXISTS ${OUT}.bad)
  message(FATAL_ERROR "make-model --type q4_k at shape tiny: rc ${rc}, ${o}${e}")
endif()
# An output folder that does not exist fails naming the path.
execute_process(COMMAND ${MAKE} --shape tiny --type q8_0 -o ${OUT}.missing/x.gguf RESULT_VARIABLE rc OUTPUT_VARIABLE o
                ERROR_VARIABLE e)
if(NOT rc EQUAL 1 OR NOT e MATCHES "x.gguf: cannot create: No such file or directory")
  message(FATAL_ERROR "make-model into a missing folder: rc ${rc}, ${o}${e}")
endif()
# The encoder-decoder shapes (t5 architecture): t5-tiny loads, inspects as encoder + decoder, and runs a source through
# `basalt run --timings` (the split printed) and `basalt batch` (a "source" line). t5-small and pegasus share the
# writer (docs/performance.md measures them).
execute_process(COMMAND ${MAKE} --shape t5-tiny --type q8_0 -o ${OUT}.t5.gguf RESULT_VARIABLE rc OUTPUT_VARIABLE o
                ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "t5 2\\+2 layers")
  message(FATAL_ERROR "make-model --shape t5-tiny failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} inspect ${OUT}.t5.gguf RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "architecture t5" OR NOT o MATCHES "2 layers \\(encoder\\) \\+ 2 \\(decoder\\)"
   OR NOT o MATCHES "runnable     yes")
  message(FATAL_ERROR "inspect of the t5-tiny model failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} run -m ${OUT}.t5.gguf -p "Once upon a time" -n 4 --timings RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT e MATCHES "encode [0-9]+ source tokens")
  message(FATAL_ERROR "run of the t5-tiny model failed (${rc}): ${o}${e}")
endif()
file(WRITE ${OUT}.t5.jsonl "{\"id\": \"a\", \"source\": \"Once upon a time\", \"max_tokens\": 3}\n{\"id\": \"b\", \"source_tokens\": [1, 5, 9], \"tokens\": [0, 7], \"max_tokens\": 2}\n")
execute_process(COMMAND ${EXE} batch -m ${OUT}.t5.gguf --requests ${OUT}.t5.jsonl RESULT_VARIABLE rc OUTPUT_VARIABLE o
                ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "\"id\":\"a\"" OR NOT o MATCHES "\"id\":\"b\"" OR NOT o MATCHES "\"source_tokens\":3")
  message(FATAL_ERROR "batch with sources on the t5-tiny model failed (${rc}): ${o}${e}")
endif()
# The gemma4 shapes (dense layout: per-layer head sizes and K/V heads, V = K on full layers, proportional rope,
# layer_output_scale): gemma4-tiny, the 31B layout at test size, written as q4_0, inspects as runnable and runs.
execute_process(COMMAND ${MAKE} --shape gemma4-tiny --type q4_0 -o ${OUT}.gemma4.gguf RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make-model --shape gemma4-tiny failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} inspect ${OUT}.gemma4.gguf RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "architecture gemma4" OR NOT o MATCHES "runnable     yes"
   OR NOT o MATCHES "rows per layer: [0-9]+ full, [0-9]+ sliding-window")
  message(FATAL_ERROR "inspect of the gemma4-tiny model failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} run -m ${OUT}.gemma4.gguf -p "Once upon a time" -n 4 --ignore-eos RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT e MATCHES "generated 4 tokens")
  message(FATAL_ERROR "run of the gemma4-tiny model failed (${rc}): ${o}${e}")
endif()
# The gpt-oss shapes (MoE on every layer, q/k/v/o biases, attention sinks, YaRN, alternating window): gpt-oss-tiny,
# the 20B layout at test size, written as mxfp4 (experts MXFP4, other matrices Q8_0), inspects as runnable and runs.
execute_process(COMMAND ${MAKE} --shape gpt-oss-tiny --type mxfp4 -o ${OUT}.gpt-oss.gguf RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "experts mxfp4, other matrices q8_0")
  message(FATAL_ERROR "make-model --shape gpt-oss-tiny failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} inspect ${OUT}.gpt-oss.gguf RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "architecture gpt-oss" OR NOT o MATCHES "runnable     yes"
   OR NOT o MATCHES "experts      4 \\(2 used per token\\)" OR NOT o MATCHES "rope scaling yarn x32")
  message(FATAL_ERROR "inspect of the gpt-oss-tiny model failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} run -m ${OUT}.gpt-oss.gguf -p "Once upon a time" -n 4 --ignore-eos RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT e MATCHES "generated 4 tokens")
  message(FATAL_ERROR "run of the gpt-oss-tiny model failed (${rc}): ${o}${e}")
endif()
# gemma4-e2b-tiny: Gemma 4 E2B's layout at test size (per-layer embeddings, the last 3 of 9 layers sharing K/V with a
# double-wide FFN, attn_v everywhere), written as q4_0: inspects as runnable and runs.
execute_process(COMMAND ${MAKE} --shape gemma4-e2b-tiny --type q4_0 -o ${OUT}.gemma4e.gguf RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make-model --shape gemma4-e2b-tiny failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} inspect ${OUT}.gemma4e.gguf RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT o MATCHES "architecture gemma4" OR NOT o MATCHES "runnable     yes")
  message(FATAL_ERROR "inspect of the gemma4-e2b-tiny model failed (${rc}): ${o}${e}")
endif()
execute_process(COMMAND ${EXE} run -m ${OUT}.gemma4e.gguf -p "Once upon a time" -n 4 --ignore-eos RESULT_VARIABLE rc
                OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0 OR NOT e MATCHES "generated 4 tokens")
  message(FATAL_ERROR "run of the gemma4-e2b-tiny model failed (${rc}): ${o}${e}")
endif()
