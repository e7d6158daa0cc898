# scripts/results-archive.sh: a study's finished runs as one file (the sweep file, each run's
# config.yaml and events.jsonl, no checkpoints) that, restored into another results folder and
# ingested there, reports exactly what the original does — and resumes there training nothing
# that was finished: its report.md byte for byte, every run it counted ingested again. A symbolic
# link (an events.jsonl kept elsewhere) is archived as its file; --out a folder writes into it.
# Refusals: an unknown sweep, a folder without a database, a link that points nowhere.
source "$(dirname "$0")/lib.bash"
archive=$(cd "$(dirname "$0")/../.." && pwd)/scripts/results-archive.sh
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
prepare_bytes
tiny_sweep s.yaml arch 40 "nodrop: {model.dropout: 0.0}"
"$SWEEP" run s.yaml --results res --devices cpu:2x1 > run.txt 2>&1 || fail "sweep run: $(cat run.txt)"
"$SWEEP" report arch --results res > before.txt || fail "report: $(cat before.txt)"
"$SWEEP" report arch --results res --out rep-before > /dev/null || fail "report --out"
# one run's events kept on another disk, linked from its folder
linked=$(ls res/runs | sed -n 1p)
mkdir elsewhere && mv "res/runs/$linked/events.jsonl" elsewhere/ && ln -s "$PWD/elsewhere/events.jsonl" "res/runs/$linked/events.jsonl"

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
(cd other && "$SWEEP" report arch --results res --out rep-after > /dev/null) || fail "report --out of the restored"
cmp rep-before/report.md other/rep-after/report.md || fail "report.md differs: $(diff rep-before/report.md other/rep-after/report.md)"
[ ! -L "other/res/runs/$linked/events.jsonl" ] || fail "the archive kept a link"
# what it said it archived is what a restore ingests
[ "$(sqlite3 other/res/sweep.db "SELECT COUNT(*) FROM sweep_runs s JOIN runs r USING (run_id) WHERE s.sweep = 'arch' AND r.status = 'done'")" = 4 ] ||
  fail "the restore holds other than the 4 runs archived: $(sqlite3 other/res/sweep.db "SELECT run_id, status FROM runs")"
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

# --out an existing folder: the archive inside it, nothing hidden left
mkdir outdir
"$archive" arch --results res --out outdir > archive.txt || fail "archive into a folder: $(cat archive.txt)"
grep -q "outdir/runs.tar.gz: sweep arch, 4 finished runs" archive.txt || fail "$(cat archive.txt)"
[ "$(ls -A outdir)" = runs.tar.gz ] || fail "the folder holds: $(ls -A outdir)"
# --out a folder not yet made (named with a trailing /): made; a device or a FIFO: refused, untouched
"$archive" arch --results res --out newdir/ > archive.txt || fail "archive into a new folder: $(cat archive.txt)"
[ -f newdir/runs.tar.gz ] || fail "no archive in newdir/: $(ls -A newdir)"
mkfifo pipe
expect_rc 2 "$archive" arch --results res --out pipe 2> bad.txt
grep -q -- "--out pipe is neither a folder nor a file" bad.txt && [ -p pipe ] || fail "--out a FIFO: $(cat bad.txt)"
# a link that points nowhere: refused by name
mv elsewhere gone
expect_rc 2 "$archive" arch --results res --out kept/runs.tar.gz 2> bad.txt
grep -q "res/runs/$linked/events.jsonl is missing (a link to .*elsewhere/events.jsonl, which is not there)" bad.txt ||
  fail "a dangling link: $(cat bad.txt)"
mv gone elsewhere

expect_rc 2 "$archive" nosuch --results res 2> bad.txt
grep -q "no sweep nosuch" bad.txt || fail "unknown sweep: $(cat bad.txt)"
expect_rc 2 "$archive" arch --results nowhere 2> bad.txt
grep -q "nowhere/sweep.db: no results database" bad.txt || fail "no database: $(cat bad.txt)"
echo "results archive: ok"
