#!/usr/bin/env python3
"""The README cannot drift from the tools (issue 22, item 15).

readme-commands.py run SRC_DIR BUILD_DIR WORK_DIR MOCK_PLUGIN
    Runs every command of README.md's "Using it" block and fails when one exits non-zero. The commands run in
    WORK_DIR/repo, which looks like the repository root (links build -> BUILD_DIR, models, docs, ...; ../shared is
    the real ../shared), so every relative path means what it means for a reader at the root. Lines ending in a
    backslash continue; NAME=VALUE lines are kept as a prelude for the commands after them. "[...]" after a space is
    an optional part: the command runs without it and with each '|'-separated choice in it; an unquoted word a|b|c
    (no spaces, not a pipe) runs once per choice; a command with several such parts runs in every combination. Only what would take minutes is shortened (SHORTEN below) and
    only placeholders are swapped (PLACEHOLDERS).

readme-commands.py layout SRC_DIR
    Checks that the Layout section's plugins/ entry names every folder under plugins/ and nothing else.
"""
import os
import re
import subprocess
import sys
import time

# (pattern, replacement) applied to each command variant: long work made short, the README's words kept otherwise.
SHORTEN = [
    (r"--shape smollm2-135m", "--shape tiny"),  # a 140 MB file and ~20 s; the shape list is tested elsewhere
    (r"(basalt bench .*)-r 3", r"\1-r 1"),  # one timed repetition is enough to know the command works
    (r"(--mode ragged)", r"\1 -r 1"),
    (r"(--mode chunked)", r"\1 -r 1 --long-prompt 48 --chunks 0 16"),
    (r"(--mode streams)", r"\1 -r 1 -n 8 --streams 1 4"),
    (r"(--mode decoders)", r"\1 -r 1 -n 8"),
    (r"(--mode prefix)", r"\1 -r 1 --long-prompt 64"),
]


def placeholders(mock_plugin, work):
    return [
        ("./my-sampler.so", mock_plugin),
        ("~/opt/basalt", os.path.join(work, "opt-basalt")),
    ]


def using_it_block(readme):
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^## Using it\n(.*?)^```sh\n(.*?)^```", text, re.S | re.M)
    if not m:
        sys.exit("README.md: no ```sh block under '## Using it'")
    return m.group(2)


def logical_lines(block):
    out, cur = [], ""
    for line in block.splitlines():
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.lstrip().startswith("#"):
            out.append(cur.strip())
        cur = ""
    return out


def split_unquoted(cmd):
    """Yields (text, quoted) runs of the command: quoted runs are left alone by the variant rules."""
    runs, cur, quote = [], "", None
    for ch in cmd:
        if quote:
            cur += ch
            if ch == quote:
                runs.append((cur, True))
                cur, quote = "", None
        elif ch in "'\"":
            if cur:
                runs.append((cur, False))
            cur, quote = ch, ch
        else:
            cur += ch
    if cur:
        runs.append((cur, quote is not None))
    return runs


def strip_comment(cmd):
    """The command without a trailing '# comment' (outside quotes)."""
    out = ""
    for text, quoted in split_unquoted(cmd):
        if not quoted:
            m = re.search(r"(^|\s)#", text)
            if m:
                out += text[: m.start()]
                return out.rstrip()
        out += text
    return out.rstrip()


def variants(cmd):
    """The command's variants: optional [..] parts and a|b|c choices, one at a time."""
    runs = split_unquoted(cmd)
    # Find the first unquoted optional group or choice word; expand it and recurse on the results.
    offset = 0
    for text, quoted in runs:
        if not quoted:
            m = re.search(r"(?<=\s)\[([^\[\]]+)\]", text)
            if m:
                start, end = offset + m.start(), offset + m.end()
                before, after = cmd[:start].rstrip(), cmd[end:]
                out = variants(before + after)
                for choice in m.group(1).split("|"):
                    out += variants(before + " " + choice.strip() + after)
                return out
            m = re.search(r"(?<![\S])([^\s|]+(?:\|[^\s|]+)+)(?![\S])", text)
            if m:
                start, end = offset + m.start(1), offset + m.end(1)
                out = []
                for choice in m.group(1).split("|"):
                    out += variants(cmd[:start] + choice + cmd[end:])
                return out
        offset += len(text)
    return [cmd]


def make_root(src, build, work):
    """WORK/repo: the repository root as the README's reader sees it, with outputs landing in WORK."""
    root = os.path.join(work, "repo")
    os.makedirs(root, exist_ok=True)
    links = {"build": build}
    for name in os.listdir(src):
        if name not in (".git", "build") and not name.startswith("build"):
            links.setdefault(name, os.path.join(src, name))
    for name, target in links.items():
        path = os.path.join(root, name)
        if os.path.islink(path):
            os.unlink(path)
        os.symlink(target, path)
    shared = os.path.join(work, "shared")
    if os.path.islink(shared):
        os.unlink(shared)
    os.symlink(os.path.realpath(os.path.join(src, "..", "shared")), shared)
    return root


def run(src, build, work, mock_plugin):
    os.makedirs(work, exist_ok=True)
    root = make_root(src, build, work)
    prelude, failures, count = [], [], 0
    swaps = placeholders(mock_plugin, work)
    for line in logical_lines(using_it_block(os.path.join(src, "README.md"))):
        cmd = strip_comment(line)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S+", cmd):
            prelude.append(cmd)
            continue
        for v in variants(cmd):
            for old, new in swaps:
                v = v.replace(old, new)
            for pattern, repl in SHORTEN:
                v = re.sub(pattern, repl, v)
            script = "\n".join(prelude + ["set -o pipefail", v])
            t0 = time.time()
            p = subprocess.run(["bash", "-c", script], cwd=root, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, errors="replace")
            count += 1
            status = "ok" if p.returncode == 0 else f"FAILED (exit {p.returncode})"
            print(f"{status} {time.time() - t0:6.2f} s  {v}", flush=True)
            if p.returncode != 0:
                failures.append(v)
                print((p.stdout + p.stderr)[-3000:])
    print(f"{count} command variants, {len(failures)} failed")
    return 1 if failures or count == 0 else 0


def layout(src):
    text = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    m = re.search(r"^## Layout\n+```\n(.*?)^```", text, re.S | re.M)
    if not m:
        sys.exit("README.md: no Layout block")
    entry = re.search(r"^plugins/(.*?)(?=^\S)", m.group(1), re.S | re.M)
    if not entry:
        sys.exit("README.md: the Layout block has no plugins/ entry")
    listed = set(re.findall(r"\b((?:backend|kv|sampler|decoder|steering)-[a-z0-9]+(?:-[a-z0-9]+)*)\b",
                            entry.group(1)))
    plugins = os.path.join(src, "plugins")
    folders = {d for d in os.listdir(plugins) if os.path.isfile(os.path.join(plugins, d, "CMakeLists.txt"))}
    missing, extra = sorted(folders - listed), sorted(listed - folders)
    print(f"plugins/ folders: {len(folders)}; listed in README's Layout: {len(listed)}")
    if missing:
        print("not listed in README.md's Layout: " + ", ".join(missing))
    if extra:
        print("listed in README.md's Layout but not a folder under plugins/: " + ", ".join(extra))
    return 1 if missing or extra else 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "run":
        sys.exit(run(*sys.argv[2:]))
    if len(sys.argv) == 3 and sys.argv[1] == "layout":
        sys.exit(layout(sys.argv[2]))
    sys.exit(__doc__)
