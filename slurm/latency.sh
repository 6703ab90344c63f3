#!/usr/bin/env bash
# What the job_submit filter adds to a submission (docs/slurm.md): times N held submissions of
# SCRIPT with --chdir=CHDIR, each once through the filter and once opted out
# (`--comment=schedlm=off`: the plugin returns before running anything), interleaved, while a
# loop of `squeue` runs beside them; prints the median, 99th percentile and maximum of each,
# in milliseconds, and cancels the jobs. Needs SLURM_CONF (slurm/cluster.sh) and the
# filter's settings in place (schedlm-submit.conf beside slurm.conf).
#
#   slurm/latency.sh N SCRIPT CHDIR
set -euo pipefail
n="${1:?N}"
script="$(realpath "${2:?SCRIPT}")"
chdir="$(realpath "${3:?CHDIR}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

ms() { echo $(( $(date +%s%N) / 1000000 )); }

stats() { # name file: median, p99, max of the numbers in file
  sort -n "$2" | awk -v name="$1" '{ v[NR] = $1 } END {
    p99 = int(NR * 0.99 + 0.999); if (p99 > NR) p99 = NR; if (p99 < 1) p99 = 1
    printf "%s: n %d, median %d ms, p99 %d ms, max %d ms\n", name, NR, v[int((NR + 1) / 2)], v[p99], v[NR] }'
}

# squeue beside the submissions, until they end.
(
  while [ ! -e "$work/done" ]; do
    t0=$(ms); squeue -h >/dev/null 2>&1 || true; echo $(( $(ms) - t0 )) >> "$work/squeue"
    sleep 0.05
  done
) &
looper=$!

for _ in $(seq 1 "$n"); do
  for mode in on off; do
    extra=()
    [ "$mode" = off ] && extra=(--comment=schedlm=off)
    t0=$(ms)
    id=$(sbatch --parsable --hold --output=/dev/null --chdir="$chdir" "${extra[@]}" "$script" 2>"$work/told")
    echo $(( $(ms) - t0 )) >> "$work/$mode"
    echo "$id" >> "$work/ids"
  done
done
touch "$work/done"
wait "$looper"
echo "last message: $(tr '\n' ' ' < "$work/told" | cut -c1-300)"
stats "sbatch, filter on " "$work/on"
stats "sbatch, filter off" "$work/off"
stats "squeue beside them" "$work/squeue"
xargs scancel < "$work/ids" 2>/dev/null || true
