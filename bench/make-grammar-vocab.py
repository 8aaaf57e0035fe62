#!/usr/bin/env python3
"""Writes a vocab-only GGUF for the grammar benchmarks: the metadata of a tiny gemma3 model (its architecture keys,
so llama.cpp loads it with vocab_only) with a SentencePiece vocabulary of 262144 tokens, gemma3's size. Gemma's own
tokenizer is not in the test data, so the pieces are real ones: the normal tokens of the byte-level BPE vocabularies
given (llama.cpp's ggml-vocab-*.gguf; SentencePiece ones taken as they are), decoded to bytes, kept when valid UTF-8, spaces written as U+2581, deduplicated
and taken round-robin so every source is represented (filled up with the pieces' forms with and without a
leading space); then gemma-style specials (<pad> <eos> <bos> <unk>
<start_of_turn> <end_of_turn>) and the 256 byte tokens <0xXX>. Both bench-grammar (Basalt's tokenizer) and
bench/llama-cpp-grammar.cpp (llama.cpp's) read the same token texts from it.

    bench/make-grammar-vocab.py GEMMA3.gguf OUT.gguf VOCAB.gguf [VOCAB.gguf ...]
"""
import struct
import sys

N_VOCAB = 262144
SPECIALS = [("<pad>", 3), ("<eos>", 3), ("<bos>", 3), ("<unk>", 2), ("<start_of_turn>", 3), ("<end_of_turn>", 3)]
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF scalar type -> bytes


class Reader:
    def __init__(self, data):
        self.d, self.o = data, 0

    def take(self, n):
        b = self.d[self.o:self.o + n]
        self.o += n
        return b

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        return self.take(self.u64())

    def value(self, t):
        """The value of type t as (raw bytes, python value)."""
        start = self.o
        if t in FIXED:
            v = self.take(FIXED[t])
        elif t == 8:
            v = self.string()
        elif t == 9:
            et, n = self.u32(), self.u64()
            v = [self.value(et)[1] for _ in range(n)]
        else:
            raise ValueError(f"GGUF value type {t}")
        return self.d[start:self.o], v


def read_kv(path):
    r = Reader(open(path, "rb").read())
    if r.take(4) != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.u32()
    r.u64()  # tensors (ignored)
    kv = []
    for _ in range(r.u64()):
        key = r.string().decode()
        t = r.u32()
        raw, v = r.value(t)
        kv.append((key, t, raw, v))
    return kv


def byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def pieces(path, dec):
    kv = {k: v for k, _, _, v in read_kv(path)}
    tokens = kv["tokenizer.ggml.tokens"]
    types = [struct.unpack("<i", t)[0] for t in kv["tokenizer.ggml.token_type"]]
    spm = kv["tokenizer.ggml.model"] == b"llama"
    for tok, ty in zip(tokens, types):
        if ty != 1:
            continue
        if spm:  # already SentencePiece pieces (U+2581 for spaces)
            text = tok.decode("utf-8", errors="replace")
            if text and " " not in text and "\ufffd" not in text and "\0" not in text:
                yield text
            continue
        try:
            raw = bytes(dec[c] for c in tok.decode("utf-8"))
            text = raw.decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue
        if text and "\u2581" not in text and "\0" not in text:  # llama.cpp reads token texts as C strings
            yield text.replace(" ", "\u2581")


def enc_str(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    gemma, out, sources = sys.argv[1], sys.argv[2], sys.argv[3:]
    dec = byte_decoder()
    tokens = [s for s, _ in SPECIALS] + [f"<0x{b:02X}>" for b in range(256)]
    types = [t for _, t in SPECIALS] + [6] * 256
    seen = set(tokens)
    iters = [pieces(p, dec) for p in sources]
    while len(tokens) < N_VOCAB and iters:
        for it in list(iters):
            piece = next(it, None)
            if piece is None:
                iters.remove(it)
            elif piece not in seen:
                seen.add(piece)
                tokens.append(piece)
                types.append(1)
            if len(tokens) == N_VOCAB:
                break
    # Real vocabularies hold many words both with and without a leading space: fill up with the other form.
    for piece in list(tokens[len(types) - types.count(1):]):
        if len(tokens) == N_VOCAB:
            break
        other = piece[1:] if piece.startswith("\u2581") else "\u2581" + piece
        if other and other not in seen:
            seen.add(other)
            tokens.append(other)
            types.append(1)
    if len(tokens) < N_VOCAB:
        sys.exit(f"only {len(tokens)} distinct pieces in the sources; give more vocabularies")
    kv = [(k, t, raw) for k, t, raw, _ in read_kv(gemma) if not k.startswith("tokenizer.")]
    arr = lambda et, items: struct.pack("<IQ", et, len(items)) + b"".join(items)
    kv += [
        ("tokenizer.ggml.model", 8, enc_str("llama")),
        ("tokenizer.ggml.pre", 8, enc_str("default")),
        ("tokenizer.ggml.tokens", 9, arr(8, [enc_str(t) for t in tokens])),
        ("tokenizer.ggml.scores", 9, arr(6, [struct.pack("<f", -float(i)) for i in range(N_VOCAB)])),
        ("tokenizer.ggml.token_type", 9, arr(5, [struct.pack("<i", t) for t in types])),
        ("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 2)),
        ("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 1)),
        ("tokenizer.ggml.unknown_token_id", 4, struct.pack("<I", 3)),
        ("tokenizer.ggml.padding_token_id", 4, struct.pack("<I", 0)),
        ("tokenizer.ggml.add_bos_token", 7, b"\x01"),
        ("tokenizer.ggml.add_eos_token", 7, b"\x00"),
        ("tokenizer.ggml.add_space_prefix", 7, b"\x00"),
    ]
    body = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
    body += b"".join(enc_str(k) + struct.pack("<I", t) + raw for k, t, raw in kv)
    body += b"\0" * (-len(body) % 32)
    open(out, "wb").write(body)
    print(f"wrote {out}: {len(tokens)} tokens from {len(sources)} vocabularies")


if __name__ == "__main__":
    main()
