#!/bin/sh
# The smoke job of retest-after-update: a deterministic result the node
# computes with its own tools (awk's floating point, sort): it must not
# change across an update of the node. Replace it with what your jobs
# depend on (a training step with a fixed seed, one rendered frame).
set -eu
out=$NAVETTE_OUTPUTS/smoke.txt
awk 'BEGIN { s = 0; for (i = 1; i <= 100000; i++) s += sin(i) * cos(i / 3); printf "%.6f\n", s }' >"$out"
printf '%s\n' 5 3 9 1 7 | sort -n | tr '\n' ' ' >>"$out"
echo >>"$out"
echo "smoke: ok on $(uname -n)"
