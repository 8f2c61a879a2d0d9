#!/bin/sh
# check_model.sh (make check): the transactions model (test/model/transactions_model) runs,
# its windows' sums check out at 8 and 32 simulated ranks, and it shows what it exists to
# show: nonblocking epochs with access_after_access_reorder complete more transactions in
# modelled time than blocking ones (the model is deterministic: seeded, no real timing).
set -u
model=${top_builddir:-.}/test/model/transactions_model
out=$(NBRMA_MODEL_PER_RANK=64 "$model" 8 32) || { echo "$out"; echo "FAIL: the model failed"; exit 1; }
echo "$out"
echo "$out" | awk '$1 ~ /^[0-9]+$/ {
        rows++
        if ($4 <= $2) { print "FAIL: " $1 " ranks: nonblocking+aaar " $4 " tps <= blocking " $2; bad = 1 }
    }
    END { if (rows != 2) { print "FAIL: expected 2 rows, got " rows; bad = 1 } exit bad }' || exit 1
echo "check_model: ok"
