#!/usr/bin/python3
"""Builds Basalt's training corpus from Debian's `fortunes` package (deterministic).

Reads the UTF-8 fortune files (/usr/share/games/fortunes/*.u8, the `%`-separated cookie files of the
BSD fortune program), cleans them and writes train.txt / valid.txt. Each fortune is kept whole and goes
to one split: validation takes the fortunes whose SHA-256 (of the cleaned text) falls in the first
VALID_PERCENT of the hash space, so the split does not depend on file order or on Python's hash seed.
Both files use the fortune format itself: fortunes separated by a line holding only `%`.

Licence: the `fortunes` package is in Debian main; /usr/share/doc/fortunes/copyright gives the BSD
licence of the University of California for the collection (see models/README.md).
"""
import argparse
import hashlib
import os
import re
import sys

FORTUNE_DIR = "/usr/share/games/fortunes"
# ascii-art holds drawings, not prose; translate-me is a placeholder file.
EXCLUDED = {"ascii-art", "translate-me"}
VALID_PERCENT = 5


def clean(text: str) -> str:
    # Overstrike sequences (`_\bA` underlines A, `A\bA` emboldens it): keep the character after the backspace.
    while "\b" in text:
        text = re.sub(r".\x08", "", text)
        text = text.replace("\b", "")
    text = text.replace("\r", "")
    text = "".join(ch for ch in text if ch in "\n\t" or ord(ch) >= 32 and ord(ch) != 127)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def read_fortunes(directory: str):
    names = sorted(f[:-3] for f in os.listdir(directory) if f.endswith(".u8"))
    for name in names:
        if name in EXCLUDED:
            continue
        with open(os.path.join(directory, name + ".u8"), encoding="utf-8", errors="replace") as f:
            raw = f.read()
        for chunk in re.split(r"^%$", raw, flags=re.M):
            text = clean(chunk)
            if len(text) >= 8:
                yield name, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=FORTUNE_DIR)
    ap.add_argument("--out", required=True, help="output folder for train.txt and valid.txt")
    args = ap.parse_args()
    if not os.path.isdir(args.src):
        print(f"corpus.py: {args.src} not found: install Debian's `fortunes` package", file=sys.stderr)
        return 1
    seen = set()
    train, valid = [], []
    for _, text in read_fortunes(args.src):
        if text in seen:  # a few fortunes appear in several files
            continue
        seen.add(text)
        h = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        (valid if h % 100 < VALID_PERCENT else train).append(text)
    os.makedirs(args.out, exist_ok=True)
    for name, items in (("train.txt", train), ("valid.txt", valid)):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write("\n%\n".join(items) + "\n")
    print(f"corpus: {len(train)} train fortunes ({sum(map(len, train))} chars), "
          f"{len(valid)} validation fortunes ({sum(map(len, valid))} chars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
