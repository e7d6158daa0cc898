#!/bin/sh
# One run of upstream nanoGPT, its files as they are: its train.py with its own character-level
# config, sweep's seed hook and the run's --key=value overrides, then the test loss of the model
# it saved (score.py). sweep reads the lines both print (sweep.yaml's trainer.output).
set -e
# A stop (Ctrl-C, a preemption) reaches python too: the shell waits for it to end, then stops.
trap 'exit 130' INT
trap 'exit 143' TERM
here=$(cd "$(dirname "$0")" && pwd)
cd "${NANOGPT:-$here/nanoGPT}"   # train.py reads configurator.py and data/ from its own folder
python3 train.py config/train_shakespeare_char.py "$here/seed_hook.py" "$@"
exec python3 "$here/score.py" "$@"
