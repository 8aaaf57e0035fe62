#!/usr/bin/env python3
"""What an architecture is lives in core/src/graph/ (arch-table.cpp): nothing else in the tree branches on an
architecture's name. Greps the sources of core, tools, plugins, the SDK, the ABI headers and the Python package for
an architecture-named expression (arch, hp.arch, info.arch, arch_name, kKnownArchs, ...) compared with a string
literal, held in a literal list, or tested for membership, and fails naming file:line for each.

Usage: arch-names.py REPO_ROOT
Tokenizer model names ("llama", "gpt2", "t5" as tokenizer.ggml.model says) are another namespace and not flagged."""
import os
import re
import sys

ROOTS = ["core", "tools", "plugins", "sdk", "abi", "bindings/python/basalt", "examples"]
ALLOWED = "core/src/graph/"
EXTS = (".c", ".cc", ".cpp", ".h", ".hpp", ".inc", ".def", ".py", ".js", ".sh")

# An identifier naming an architecture: "arch" at the start of a word or after '_' (arch, hp.arch, model_arch,
# arch_name), or "Arch" inside one (kKnownArchs); "search" or "march" are not.
ARCH = r"(?:\b(?:\w*_)?arch\w*|\b\w*Arch\w*)"
LIT = r"""(?:"[^"]*"|'[^']*')"""
PATTERNS = [
    # hp.arch == "gpt2", std::string(info.arch) != "t5", arch == 'llama'
    re.compile(ARCH + r"\)?\s*(?:==|!=)\s*" + LIT),
    # "gpt2" == hp.arch
    re.compile(LIT + r"\s*(?:==|!=)\s*(?:[\w:]+\()?[\w.>\[\]-]*" + ARCH),
    # strcmp(info.arch, "t5"), arch.compare("llama"), arch.rfind("qwen", 0), arch.startswith("gemma")
    re.compile(r"\b(?:strn?cmp|strcasecmp)\s*\([^;]*" + ARCH + r"[^;]*" + LIT),
    re.compile(ARCH + r"\s*\.\s*(?:compare|starts_with|ends_with|rfind|find|startswith|endswith)\s*\(\s*" + LIT),
    # a literal list of names: kKnownArchs[] = {"llama", ...}; ARCHS = ["llama", ...]
    re.compile(ARCH + r"\s*(?:\[\s*\])?\s*(?::\s*[\w\[\], ]+)?=\s*[{\[(]\s*" + LIT),
    # membership: arch in ("llama", "qwen2"), arch not in ARCHS
    re.compile(ARCH + r"\s+(?:not\s+)?in\s+[\[({A-Za-z_]"),
]


def strip_comment(line, is_py):
    """The code part of a line (a // or # comment dropped; good enough for a grep: strings holding // are rare)."""
    marker = "#" if is_py else "//"
    i = line.find(marker)
    if is_py or not line.lstrip().startswith("*"):
        return line if i < 0 else line[:i]
    return ""


def main():
    root = sys.argv[1]
    hits = []
    for top in ROOTS:
        for base, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d not in ("build", "__pycache__", "node_modules", ".git"))
            for name in sorted(files):
                if not name.endswith(EXTS):
                    continue
                path = os.path.join(base, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                if rel.startswith(ALLOWED):
                    continue
                is_py = name.endswith((".py", ".sh"))
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        code = strip_comment(line, is_py)
                        if any(p.search(code) for p in PATTERNS):
                            hits.append(f"{rel}:{n}: {line.strip()}")
    for h in hits:
        print(h)
    if hits:
        print(f"{len(hits)} comparison(s) against an architecture name outside {ALLOWED}: ask the architecture table "
              "(core/src/graph/arch-table.hpp) or the ModelHparams fields it fills instead")
        return 1
    print("no comparison against an architecture name outside " + ALLOWED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
