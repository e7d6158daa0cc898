# scripts/results-archive.sh: a study's finished runs as one file (the sweep file, each run's
# config.yaml and events.jsonl, no checkpoints) that, restored into another results folder and
# ingested there, reports exactly what the original does — and resumes there training nothing
# that was finished. Refusals: an unknown sweep, a folder without a database.
source "$(dirname "$0")/lib.bash"
archive=$(cd "$(dirname "$0")/../.." && pwd)/scripts/results-archive.sh
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
tiny_sweep s.yaml arch 40 "nodrop: {model.dropout: 0.0}"
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > run.txt 2>&1 || fail "sweep run: $(cat run.txt)"
"$SWEEP" report arch --results res > before.txt || fail "report: $(cat before.txt)"

"$archive" arch --results res --out kept/runs.tar.gz > archive.txt || fail "archive: $(cat archive.txt)"
grep -q "sweep arch, 4 finished runs" archive.txt || fail "archive: $(cat archive.txt)"
listing=$(tar tzf kept/runs.tar.gz)
[ "$(grep -c '/events.jsonl$' <<< "$listing")" -eq 4 ] || fail "the archive's runs: $listing"
grep -q '^sweeps/arch.yaml$' <<< "$listing" || fail "no sweep file in the archive: $listing"
! grep -q checkpoint <<< "$listing" || fail "checkpoints in the archive: $listing"

mkdir -p other/res
tar xzf kept/runs.tar.gz -C other/res
cp -r data other/
(cd other && "$SWEEP" ingest res > ingest.txt) || fail "ingest: $(cat other/ingest.txt)"
(cd other && "$SWEEP" report arch --results res > after.txt) || fail "report of the restored: $(cat other/after.txt)"
diff before.txt other/after.txt || fail "the restored results report otherwise"
(cd other && "$SWEEP" run ../s.yaml --results res --devices cpu:2x1 > run.txt 2>&1) || fail "run in the restored: $(cat other/run.txt)"
grep -q "4 already finished, 0 to run" other/run.txt || fail "the restored runs trained again: $(cat other/run.txt)"

# a temp a killed archive left (its process gone) is removed by the next; a live one's is not
sleep 60 & live=$!
sh -c 'exit 0' & dead=$!
wait "$dead"
touch "kept/.runs.$dead.tmp" "kept/.runs.$live.tmp"
"$archive" arch --results res --out kept/runs.tar.gz > archive.txt || fail "archive again: $(cat archive.txt)"
[ ! -e "kept/.runs.$dead.tmp" ] || fail "a killed archive's temp was left"
[ -e "kept/.runs.$live.tmp" ] || fail "a running archive's temp was removed"
kill "$live"
[ "$(stat -c %a kept/runs.tar.gz)" = 644 ] || fail "the archive is not readable by all: $(stat -c %a kept/runs.tar.gz)"

expect_rc 2 "$archive" nosuch --results res 2> bad.txt
grep -q "no sweep nosuch" bad.txt || fail "unknown sweep: $(cat bad.txt)"
expect_rc 2 "$archive" arch --results nowhere 2> bad.txt
grep -q "nowhere/sweep.db: no results database" bad.txt || fail "no database: $(cat bad.txt)"
echo "results archive: ok"
