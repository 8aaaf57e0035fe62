#!/bin/sh
# Progress bars (issue 22, item 14): drawn on stderr only when it is a terminal, never into a pipe, and never with
# --no-progress. A pseudo-terminal comes from util-linux's `script -qc` when it is installed.
#   progress.sh BASALT MAKE_MODEL TEXT_FILE WORK_DIR
set -u
basalt=$1 make_model=$2 text=$3 work=$4
mkdir -p "$work"
export BASALT_PROGRESS_DELAY_MS=0  # draw from the first report: these commands finish quickly
cr=$(printf '\r')
esc=$(printf '\033')
failed=0
check() {  # NAME EXPECT(yes|no) OUTPUT: whether OUTPUT holds a bar line
    if printf '%s' "$3" | grep -q "$cr.*$esc\[K"; then has=yes; else has=no; fi
    if [ "$has" = "$2" ]; then
        echo "ok: $1 (bar drawn: $has)"
    else
        echo "FAILED: $1: bar drawn: $has, expected $2; output:"
        printf '%s\n' "$3" | od -c | head -20
        failed=1
    fi
}
ppl="perplexity -m target -f $text --ctx 64"

# stderr a pipe: no bar, the result as usual.
out=$("$basalt" $ppl 2>&1) || { echo "FAILED: perplexity exited $?: $out"; exit 1; }
check "perplexity, stderr a pipe" no "$out"
printf '%s' "$out" | grep -q "^perplexity [0-9.]* over" || { echo "FAILED: no perplexity line: $out"; failed=1; }
out=$("$basalt" quantize target "$work/q8.gguf" q8_0 2>&1) || { echo "FAILED: quantize: $out"; exit 1; }
check "quantize, stderr a pipe" no "$out"
out=$("$make_model" --shape tiny --type q8_0 -o "$work/tiny.gguf" 2>&1) || { echo "FAILED: make-model: $out"; exit 1; }
check "make-model, stderr a pipe" no "$out"
# --no-progress is accepted before and after the command (and by make-model).
"$basalt" --no-progress version >/dev/null || { echo "FAILED: basalt --no-progress version"; failed=1; }
"$basalt" run -m target -p hi -n 2 --no-progress >/dev/null 2>&1 || { echo "FAILED: run ... --no-progress"; failed=1; }
"$make_model" --no-progress --shape tiny --type q8_0 -o "$work/tiny2.gguf" >/dev/null ||
    { echo "FAILED: make-model --no-progress"; failed=1; }

if command -v script >/dev/null 2>&1; then
    tty() { script -qec "$1" /dev/null 2>&1; }
    out=$(tty "'$basalt' $ppl") || { echo "FAILED: perplexity on a terminal exited $?: $out"; exit 1; }
    check "perplexity on a terminal" yes "$out"
    printf '%s' "$out" | grep -q "perplexity \[.*%.*tokens" || { echo "FAILED: no perplexity bar text"; failed=1; }
    out=$(tty "'$basalt' --no-progress $ppl")
    check "perplexity on a terminal with --no-progress" no "$out"
    out=$(tty "'$basalt' $ppl --no-progress")
    check "perplexity on a terminal with --no-progress after the command" no "$out"
    out=$(tty "'$basalt' quantize target '$work/q8-tty.gguf' q8_0")
    check "quantize on a terminal (the library's reports)" yes "$out"
    out=$(tty "'$make_model' --shape tiny --type q8_0 -o '$work/tiny-tty.gguf'")
    check "make-model on a terminal" yes "$out"
    out=$(tty "'$make_model' --no-progress --shape tiny --type q8_0 -o '$work/tiny-tty2.gguf'")
    check "make-model on a terminal with --no-progress" no "$out"
    out=$(tty "TERM=dumb '$basalt' $ppl")
    check "perplexity on a TERM=dumb terminal" no "$out"
else
    echo "note: no 'script' (util-linux): the terminal cases were not run"
fi
exit $failed
