#!/bin/sh
# check_scale_model.sh (make check): the scale model (test/model/scale_model) runs p = 2 ..
# 1024 simulated ranks, every put it makes arrives, and the traffic a rank generates per
# synchronization keeps its bounds (fence ceil(log2 p) messages beyond 8 ranks, lock_all and
# PSCW 3, a burst of exclusive requests to one rank 12 each, of shared ones 11, the control region 64 bytes
# a peer). Deterministic: no real timing.
set -u
model=${top_builddir:-.}/test/model/scale_model
out=$("$model" --check --largest 1024) || { echo "$out"; echo "FAIL: the scale model failed or a bound broke"; exit 1; }
echo "$out" | grep -v '^CHECK .* ok'
checks=$(echo "$out" | grep -c '^CHECK .* ok')
if [ "$checks" -ne 70 ]; then
    echo "FAIL: expected 70 passed checks (10 job sizes x 7), got $checks"
    exit 1
fi
echo "check_scale_model: ok ($checks checks)"
