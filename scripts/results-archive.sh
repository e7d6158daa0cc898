#!/usr/bin/env bash
# A study's raw results as one file that travels (committed beside its report, copied off a
# cluster): the sweep file as it was run (with what `sweep run` saved beside it: the kind of
# device, --until-decided's design and the seeds its rounds added, --eliminate's record) and, for each of its finished
# runs (done or diverged, as `sweep run` counts them), config.yaml and events.jsonl — everything
# `sweep report`, `sweep backtest` and `--until-decided` read, without
# the checkpoints (a finished run is never trained again); and the runs of the arms --eliminate
# stopped, their curves to the look. Other unfinished runs are left out: they start afresh where
# the archive is restored — but for a branch (`branch:`), whose start is its parent's checkpoint:
# with its parent finished, it cannot start there (archive a branched sweep once it has finished).
#
#   scripts/results-archive.sh SWEEP [--results DIR] [--out FILE]   (default FILE: reports/SWEEP/runs.tar.gz;
#                                                                     a folder: FOLDER/runs.tar.gz)
# A file that is a symbolic link (an events.jsonl kept on another disk) is archived as what it
# points to; one that points nowhere is refused, by name.
#
# Restore it into a results folder, then rebuild that folder's database from its run folders:
#   tar xzf reports/SWEEP/runs.tar.gz -C results && ./build/sweep ingest results
set -euo pipefail
die() { echo "results-archive: $*" >&2; exit 2; }
sweep=${1:?usage: scripts/results-archive.sh SWEEP [--results DIR] [--out FILE]}
shift
results=results out=""
while [ $# -gt 0 ]; do
  case $1 in
    --results) results=${2:?--results needs a folder}; shift ;;
    --out) out=${2:?--out needs a file}; shift ;;
    *) die "unknown argument $1" ;;
  esac
  shift
done
out=${out:-reports/$sweep/runs.tar.gz}
case $out in */) mkdir -p "$out" ;; esac  # a folder named as one, made where missing
[ -d "$out" ] && out=${out%/}/runs.tar.gz  # a folder: the archive inside it
[ ! -e "$out" ] || [ -f "$out" ] || die "--out $out is neither a folder nor a file: the archive would replace it"
db=$results/sweep.db
[ -f "$db" ] || die "$db: no results database (--results names the folder that holds sweep.db)"
[ -d "$(dirname "$out")" ] || [ ! -e "$(dirname "$out")" ] || die "--out $out: $(dirname "$out") is not a folder"
[ -f "$results/sweeps/$sweep.yaml" ] || die "$results/sweeps/$sweep.yaml: no sweep $sweep in $results (sweep status lists them)"
sql_name=${sweep//\'/\'\'}
mapfile -t ids < <(sqlite3 "$db" "select distinct r.run_id from sweep_runs s join runs r on r.run_id = s.run_id
                                   where s.sweep = '$sql_name' and r.status in ('done', 'diverged') order by r.run_id")
[ ${#ids[@]} -gt 0 ] || die "sweep $sweep has no finished runs in $results"
# the runs --eliminate stopped (by id: the runs its record's stops judged, whatever their arm is named
# now): their curves to the look, which the report's figures read (no checkpoint: restored, such a run
# trains from its start if finished later)
mapfile -t stopped < <(sqlite3 "$db" "select distinct r.run_id from sweep_runs s join runs r on r.run_id = s.run_id
                                       join sweeps w on w.name = s.sweep,
                                            json_each(w.design, '\$.eliminate.stopped') stop,
                                            json_each(stop.value, '\$.runs') judged
                                       where s.sweep = '$sql_name' and judged.value = r.run_id
                                         and r.status not in ('done', 'diverged') order by r.run_id")
ids+=("${stopped[@]}")
files=("sweeps/$sweep.yaml")
# its device kind, --until-decided's design and added seeds, a trainer of your own as it ran (or an
# older folder's record of its folder), the sweep file's name as it was run
for extra in device rounds eliminated trainer trainer-dir file; do
  [ -f "$results/sweeps/$sweep.$extra" ] && files+=("sweeps/$sweep.$extra")
done
for id in "${ids[@]}"; do
  for f in config.yaml events.jsonl; do
    [ -f "$results/runs/$id/$f" ] || die "$results/runs/$id/$f is missing$([ -L "$results/runs/$id/$f" ] &&
      echo " (a link to $(readlink "$results/runs/$id/$f"), which is not there)"): the run is recorded but its folder is not whole"
    files+=("runs/$id/$f")
  done
done
folder=$(dirname "$out")
mkdir -p "$folder"
# Written beside the archive under this process's id, then renamed over it: a kill leaves the old
# archive whole. What a killed one left (its process gone) goes.
for stale in "$folder"/.runs.*.tmp; do
  [ -e "$stale" ] || continue
  pid=${stale##*/.runs.}
  pid=${pid%.tmp}
  kill -0 "$pid" 2>/dev/null || rm -f "$stale"
done
tmp="$folder/.runs.$$.tmp"
trap 'rm -f "$tmp"' EXIT
# --dereference: a link's file, never the link (restored elsewhere it would point nowhere)
tar czf "$tmp" -C "$results" --dereference --owner=0 --group=0 --mtime=@0 --sort=name "${files[@]}"
chmod 644 "$tmp"  # the archive is meant to be shared, whatever the umask
mv "$tmp" "$out"
trap - EXIT
echo "results-archive: $out: sweep $sweep, $(( ${#ids[@]} - ${#stopped[@]} )) finished runs$([ ${#stopped[@]} -eq 0 ] ||
  echo " and ${#stopped[@]} stopped by --eliminate") ($(du -h "$out" | cut -f1))"
