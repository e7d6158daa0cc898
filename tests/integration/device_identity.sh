#!/usr/bin/env bash
# The kind of device is part of what a run is: a sweep on GPU slots plans runs of its own (other
# ids), and a results folder trained before that counted (tests/data/results-before-device:
# commit 6b4f435, sweep.db at schema 8, CPU runs) keeps every id — it reports to the byte what it
# reported then and trains nothing again; its database says where each run trained, and
# `sweep ingest` of it records the same runs.
source "$(dirname "$0")/lib.bash"
cp -r "$SWEEP_TEST_DATA/results-before-device" before && cd before
DB=results/sweep.db
[ "$(sql 'PRAGMA user_version')" -eq 8 ] || fail "the fixture is not a schema-8 database"
ids() { sed -n 's/.* \([0-9a-f]\{16\}\) .*/\1/p' "$1" | sort; }

# ---- reported as before, by this version (the database migrated on the way) ----
"$SWEEP" report before --results results > report.txt || fail "report of the old results: $(cat report.txt)"
diff -u "$SWEEP_TEST_DATA/results-before-device/report.txt" report.txt > report.diff ||
  fail "the old results report differently: $(cat report.diff)"
[ "$(sql 'PRAGMA user_version')" -ge 9 ] || fail "the database was not migrated"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE device = 'cpu'")" -eq 4 ] || fail "old runs' device: $(sql 'SELECT run_id, device FROM runs')"

# ---- run again on CPU slots: the same ids, all finished, nothing trained ----
"$SWEEP" run before.yaml --results results --devices cpu:2x1 > again.txt 2>&1 || fail "sweep run again: $(cat again.txt)"
grep -q "4 runs, 4 already finished, 0 to run" again.txt || fail "the old runs were not all found finished: $(cat again.txt)"
[ "$(ls results/runs | wc -l)" -eq 4 ] || fail "a run folder was added: $(ls results/runs)"
"$SWEEP" status before --results results > status.txt || fail "status: $(cat status.txt)"
[ "$(grep -c ' done  *cpu ' status.txt)" -eq 4 ] || fail "status shows no device for the old runs: $(cat status.txt)"

# ---- the same sweep on GPU slots is other runs (planned here; training them needs a GPU) ----
"$SWEEP" plan before.yaml --results results > plan-cpu.txt || fail "plan: $(cat plan-cpu.txt)"
"$SWEEP" plan before.yaml --results results --devices cuda:0 > plan-gpu.txt || fail "plan on cuda: $(cat plan-gpu.txt)"
[ "$(ids plan-cpu.txt | wc -l)" -eq 4 ] && [ "$(ids plan-gpu.txt | wc -l)" -eq 4 ] || fail "plans: $(cat plan-cpu.txt plan-gpu.txt)"
[ "$(ids plan-cpu.txt)" = "$(ls results/runs | sort)" ] || fail "the CPU plan's ids are not the old runs': $(cat plan-cpu.txt)"
[ -z "$(comm -12 <(ids plan-cpu.txt) <(ids plan-gpu.txt))" ] || fail "a GPU run shares an id with a CPU run"
[ "$(grep -c ' done ' plan-gpu.txt)" -eq 0 ] || fail "a GPU run counts a CPU run's result: $(cat plan-gpu.txt)"
if ! grep -q '^cuda:0:' <<< "$("$SWEEP" devices)"; then
  expect_rc 2 "$SWEEP" run before.yaml --results results --devices cuda:0 2> nogpu.err
  [ "$(ls results/runs | wc -l)" -eq 4 ] || fail "a refused GPU sweep wrote run folders"
fi

# ---- ingested into a new database: the same runs, members of the same sweep ----
"$SWEEP" ingest results --results copy > ingest.txt 2>&1 || fail "ingest: $(cat ingest.txt)"
"$SWEEP" report before --results copy > report-copy.txt || fail "report of the ingested copy"
diff -u report.txt report-copy.txt > copy.diff || fail "the ingested copy reports differently: $(cat copy.diff)"
echo "device_identity: ok"
