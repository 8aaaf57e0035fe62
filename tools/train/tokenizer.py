#!/usr/bin/python3
"""Trains Basalt's SentencePiece BPE tokenizer on train.txt (deterministic: all sentences, one thread).

The settings keep SentencePiece's encoder equal to the llama.cpp-style SPM tokenizer that reads the GGUF
(`tokenizer.ggml.model = llama`): identity normalisation (no NFKC), spaces kept as they are, one dummy-prefix
space, byte fallback for every character outside the vocabulary (newlines and tabs included).
"""
import argparse
import os
import sys

import sentencepiece as spm


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", required=True, help="train.txt from corpus.py")
    ap.add_argument("--out", required=True, help="output prefix (writes PREFIX.model and PREFIX.vocab)")
    ap.add_argument("--vocab-size", type=int, default=2048)
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    spm.SentencePieceTrainer.train(
        input=args.train,
        model_prefix=args.out,
        model_type="bpe",
        vocab_size=args.vocab_size,
        character_coverage=1.0,
        byte_fallback=True,
        normalization_rule_name="identity",
        add_dummy_prefix=True,
        remove_extra_whitespaces=False,
        allow_whitespace_only_pieces=True,
        split_digits=True,
        max_sentence_length=16384,
        input_sentence_size=0,
        shuffle_input_sentence=False,
        num_threads=1,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_file=args.out + ".model")
    print(f"tokenizer: {sp.get_piece_size()} pieces -> {args.out}.model")
    return 0


if __name__ == "__main__":
    sys.exit(main())
