#!/bin/sh
# CTest check of examples/python-generate: the Python sampler runs inside the engine's loop. With the chain
# "no_digits;greedy" the continuation of a prompt that invites numbers has no digit and is not empty, while
# plain greedy (same model, C samplers only) does produce digits there: the Python sampler changed the output.
# Usage: check.sh PYTHON BASALT_CLI EXAMPLE_DIR
set -eu
py=$1 cli=$2 dir=$3
prompt="Rule 1:"
out=$("$py" "$dir/generate.py" -p "$prompt" -n 30 --samplers "no_digits;greedy")
plain=$("$cli" run -p "$prompt" -n 30 2>/dev/null)
gen=${out#"$prompt"}
printf 'python (no_digits;greedy): %s\nbasalt run (greedy): %s\n' "$gen" "$plain"
[ "${#gen}" -ge 10 ] || { echo "FAIL: generated text too short"; exit 1; }
case "$gen" in *[0-9]*) echo "FAIL: a digit got through the Python sampler"; exit 1 ;; esac
case "$plain" in *[0-9]*) ;; *) echo "FAIL: plain greedy has no digit here, the check proves nothing"; exit 1 ;; esac
echo "ok"
