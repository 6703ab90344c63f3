#!/usr/bin/env bash
# Renders eval reports as a browser would: builds a small dataset and trace, runs
# `schedlm eval` (snapshot and online), opens each report.html in headless Chromium, takes a screenshot, dumps the DOM and fails on any
# console or loading error or when the plots are missing.
#
#   tests/browser/check_report.sh [OUT_DIR]
#
# OUT_DIR (default: a fresh temporary directory) receives data/, report/ (snapshot report),
# online/ (online report on a small synthetic trace), report.png, online.png, the dumped DOMs
# and Chromium's logs. Needs Chromium (Debian: apt-get install -y chromium). SCHEDLM may name a
# built binary; otherwise it is built with `cargo build -p schedlm --no-default-features`.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser="$b"; break; fi
done
if [ -z "$browser" ]; then
    echo "check_report: no Chromium found; install it with: apt-get install -y chromium" >&2
    exit 1
fi

if [ -z "${SCHEDLM:-}" ]; then
    (cd "$root" && cargo build -q -p schedlm --no-default-features)
    SCHEDLM="${CARGO_TARGET_DIR:-$root/target}/debug/schedlm"
fi

rm -rf "$out/data" "$out/report" "$out/online"
"$SCHEDLM" dataset build -q --family hpc,dl -n 40 --queue 3..10 --split 0/0/100 \
    --node-limit 20000 --seed 7 -o "$out/data"
# Predictions: the label for most records, garbage for every fifth one.
awk '{ split($0, a, "\"id\":\""); split(a[2], b, "\""); id = b[1];
       split($0, c, "\"completion\":\""); split(c[2], d, "\""); label = d[1];
       out = (NR % 5 == 0) ? "no idea" : label;
       printf "{\"id\":\"%s\",\"output\":\"%s\"}\n", id, out }' \
    "$out/data/test.jsonl" > "$out/data/predictions.jsonl"
"$SCHEDLM" eval --data "$out/data/test.jsonl" --report "$out/report" \
    --policies "fcfs,sjf,saf,f1,wfp3,ls,optimal,predictions:$out/data/predictions.jsonl" \
    --node-limit 20000 > "$out/eval.txt"

# A small synthetic trace (deterministic) for the online report.
awk 'BEGIN { print "; MaxProcs: 32"; t = 0;
    for (i = 1; i <= 400; i++) { t += (i * 37) % 1500; run = 30 + (i * 91) % 3000;
        procs = 1 + (i * 7) % 32; req = run + (i * 13) % 600;
        print i, t, -1, run, procs, -1, -1, procs, req, -1, 1, i % 7, -1, -1, -1, -1, -1, -1 } }' \
    > "$out/data/trace.swf"
"$SCHEDLM" eval --trace "$out/data/trace.swf" --windows 3x100 --seed 2 --report "$out/online" \
    --policies "fcfs,sjf,f1,wfp3,optimal" --time-limit 20ms --node-limit 500 > "$out/online.txt"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --hide-scrollbars --enable-logging=stderr --v=0)
fail=0

# check NAME HTML PNG MIN_PLOTS HEADLINE: render, screenshot, dump the DOM, check.
check() {
    local name="$1" html="$2" png="$3" want="$4" headline="$5" dom="$out/$1.dom.html"
    local log="$out/$1.chromium.log"
    "$browser" "${flags[@]}" --user-data-dir="$(mktemp -d)" --window-size=1200,1800 \
        --screenshot="$png" "file://$html" 2> "$log" || true
    "$browser" "${flags[@]}" --user-data-dir="$(mktemp -d)" --dump-dom "file://$html" \
        > "$dom" 2>> "$log" || true
    if grep -E "CONSOLE|Uncaught|Failed to load resource|net::ERR_" "$log"; then
        echo "check_report: $name: console or loading errors (see $log)" >&2
        fail=1
    fi
    local svgs
    svgs=$(grep -o "<svg" "$dom" | wc -l)
    if [ "$svgs" -lt "$want" ]; then
        echo "check_report: $name: expected $want plots in the rendered DOM, found $svgs" >&2
        fail=1
    fi
    if ! grep -q "$headline" "$dom"; then
        echo "check_report: $name: the headline is missing from the rendered DOM" >&2
        fail=1
    fi
    local size
    size=$(stat -c %s "$png" 2>/dev/null || echo 0)
    if [ "$size" -lt 20000 ]; then
        echo "check_report: $name: screenshot $png is missing or blank ($size bytes)" >&2
        fail=1
    fi
    echo "check_report: $name: $svgs plots rendered, screenshot $png ($size bytes)"
}

check snapshot "$out/report/report.html" "$out/report.png" 2 "Best: <strong>"
check online "$out/online/report.html" "$out/online.png" 3 "Best online: <strong>"
if [ "$fail" -ne 0 ]; then
    echo "check_report: FAILED" >&2
    exit 1
fi
echo "check_report: ok"
