#!/usr/bin/env bash
# What a command of the front costs to start: `sweep`'s size, and the wall time and peak resident
# memory of `--version`, `ls`, `status` and `report` on a real study's results (a committed
# archive, restored and ingested), of a worker hosting a trainer of your own (a whole run of the
# toy trainer of the tests, a bash script: the host's own memory), and of `serve` until its first
# page has answered — for this
# build's front, its training core (`sweep-core --version`: what any process that maps LibTorch
# and CUDA holds before its first tensor, a worker of sweep's own trainer among them) and, with
# --old, another build's `sweep` side by side (e.g. one from before the front was split off).
# The median of --rounds runs each (default 5; one warm-up first). Prints the figures; asserts nothing.
#
#   scripts/bench-front.sh [--old PATH/TO/sweep] [--rounds N] [--archive reports/ladder/runs.tar.gz]
set -euo pipefail
cd "$(dirname "$0")/.."
old="" rounds=5 archive=reports/ladder/runs.tar.gz
while [ $# -gt 0 ]; do
  case $1 in
    --old) old=${2:?--old needs a sweep binary}; shift ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift ;;
    --archive) archive=${2:?--archive needs a results archive}; shift ;;
    *) echo "bench-front: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
sweep=$PWD/build/sweep
[ -x "$sweep" ] || { echo "bench-front: build sweep first (scripts/setup.sh, or --torch none)" >&2; exit 2; }
[ -z "$old" ] || [ -x "$old" ] || { echo "bench-front: --old $old is no executable" >&2; exit 2; }
[ -f "$archive" ] || { echo "bench-front: no archive $archive" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/results"
tar xzf "$archive" -C "$work/results"
"$sweep" ingest "$work/results" > /dev/null
name=$(basename "$(ls "$work"/results/sweeps/*.yaml | sed -n 1p)" .yaml)
# a run of a trainer of your own, for the worker's column: its config.yaml as `sweep run` wrote it
cp tests/data/trainers/toy-trainer.sh "$work/"
cat > "$work/own.yaml" <<'YAML'
sweep: own
baseline: base
seeds: [1]
trainer: {name: toy, command: [./toy-trainer.sh, "{train.effect}", "20", plain], files: [toy-trainer.sh], keys: {train.effect: 0.0}}
base: {}
interventions: {base: {}}
YAML
(cd "$work" && "$sweep" run own.yaml --results own > /dev/null)
own_config=$(ls "$work"/own/runs/*/config.yaml | sed -n 1p)
binaries=("$sweep")
[ ! -x "$PWD/build/sweep-core" ] || binaries+=("$PWD/build/sweep-core")
[ -z "$old" ] || binaries+=("$(cd "$(dirname "$old")" && pwd)/$(basename "$old")")
echo "bench-front: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; sweep '$name' from $archive; median of $rounds"
python3 - "$work" "$name" "$rounds" "$own_config" "${binaries[@]}" <<'PY'
import itertools, os, statistics, subprocess, sys, time, urllib.request

work, name, rounds, own_config, binaries = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
fresh = itertools.count()
results = os.path.join(work, "results")

def once(argv):
    start = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        return None
    return time.perf_counter() - start, usage.ru_maxrss / 1024  # s, MiB

def median(argv):
    argv_of = argv if callable(argv) else (lambda: argv)
    once(argv_of())  # warm-up: the page cache
    runs = [once(argv_of()) for _ in range(rounds)]
    if any(r is None for r in runs):
        return "fails"
    return "%.0f ms, %.0f MiB" % (1000 * statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))

def serve(binary):
    times, rss = [], []
    for _ in range(rounds + 1):
        start = time.perf_counter()
        p = subprocess.Popen([binary, "serve", "--results", results, "--port", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, cwd=work)
        url = None
        while url is None:
            line = p.stdout.readline()
            if not line:
                return "fails"
            url = next((w for w in line.split() if w.startswith("http://")), None)
        urllib.request.urlopen(url).read()
        times.append(time.perf_counter() - start)
        with open("/proc/%d/status" % p.pid) as f:
            rss.append(next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024)
        p.terminate()
        p.wait()
    return "%.0f ms, %.0f MiB" % (1000 * statistics.median(times[1:]), statistics.median(rss[1:]))

commands = [("--version", ["--version"]), ("ls", ["ls", "--results", results]),
            ("status", ["status", name, "--results", results]),
            ("report", ["report", name, "--results", results, "--out", os.path.join(work, "out")]),
            ("worker (own trainer)", None)]
print("| binary | size | libraries | " + " | ".join(c for c, _ in commands) + " | serve: first page |")
print("|---|---|---|" + "---|" * (len(commands) + 1))
for binary in binaries:
    core = os.path.basename(binary) == "sweep-core"
    libs = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout.count("=>")
    row = [binary, "%.1f MB" % (os.path.getsize(binary) / 1e6), str(libs)]
    for label, args in commands:
        if args is None:  # a whole hosted run, in a run folder of its own each time
            args = lambda: [binary, "worker", own_config, "--run-dir", os.path.join(work, "w%d" % next(fresh)), "--events"]
            row.append(median(args) if not core else "")
            continue
        row.append(median([binary] + args) if not core or label == "--version" else "")
    row.append(serve(binary) if not core else "")
    print("| " + " | ".join(row) + " |", flush=True)
PY
