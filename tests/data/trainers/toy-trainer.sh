#!/bin/bash
# A trainer in another language than sweep's: it prints sweep's events (docs/reference.md,
# "Events") for a known loss curve, as any program can. toy-trainer.sh EFFECT STEPS MODE [PARAMS]
#   the loss after step s of n: 3 − EFFECT + a seed's offset + (n − s)/n; the test loss its last.
#   MODE: plain | garble (malformed events too) | stall (once) | crash (kill -9 of itself, once) |
#         no-test (ends "done" without a test loss) | slow (0.3 s a step) | noisy (unseeded noise)
set -u
effect=$1 steps=$2 mode=$3 params=${4:-1000}
offset=$(awk -v s="$SWEEP_INIT_SEED" 'BEGIN { printf "%.6f", (s * 7919 % 13) / 1000 }')
if [ "$mode" = noisy ]; then  # noise the seeds do not decide, as GPU atomics or an unseeded loader add
  offset=$(awk -v o="$offset" -v r="$RANDOM" 'BEGIN { printf "%.6f", o + (r % 1000) / 1000000 }')
fi
ckpt="$SWEEP_CHECKPOINT_DIR/step"
start=0
if [ "$SWEEP_RESUME" = 1 ] && [ -f "$ckpt" ]; then start=$(cat "$ckpt"); fi
stop=0
trap 'stop=1' TERM INT
# loss_at S sets $loss, in the shell itself: a child (awk, a $(...) subshell) would die of the
# SIGTERM the trap above is for, and leave the step's event without its loss.
printf -v effect_u '%.0f' "${effect}e6"
printf -v offset_u '%.0f' "${offset}e6"
loss_at() {
  local u=$(( 3000000 - effect_u + offset_u + ((steps - $1) * 2000000 / steps + 1) / 2 ))  # millionths
  printf -v loss '%d.%06d' $((u / 1000000)) $((u % 1000000))
}
resumed=false; [ "$start" -gt 0 ] && resumed=true
echo "{\"event\":\"start\",\"step\":$start,\"tokens\":$((start * 64)),\"total_steps\":$steps,\"tokens_per_step\":64,\"params\":$params,\"resumed\":$resumed}"
echo "the trainer's own output: not an event"
for ((s = start + 1; s <= steps; s++)); do
  if [ "$mode" = slow ]; then sleep 0.3; else sleep 0.02; fi
  loss_at "$s"
  echo "{\"event\":\"train\",\"step\":$s,\"tokens\":$((s * 64)),\"loss\":$loss,\"lr\":0.001,\"tokens_per_s\":3200}"
  if [ "$mode" = garble ] && [ "$s" = 2 ]; then
    echo '{"event":"train","step":"two","tokens":128,"loss":1}'
    echo '{"event":"bogus","step":2}'
    echo '{"event":"train","step":2,'
    echo '{"event":"eval","step":2,"split":"val","loss":1e400}'
    printf '{"event":"train","step":2,"tokens":128,"loss":1,"pad":"%s"}\n' "$(head -c 300000 /dev/zero | tr '\0' x)"
    # 100,000 arrays deep (200 KB, under the line cut): once a stack overflow of the worker
    printf '{"event":"train","step":2,"tokens":128,"loss":1,"deep":%s%s}\n' "$(head -c 100000 /dev/zero | tr '\0' '[')" \
      "$(head -c 100000 /dev/zero | tr '\0' ']')"
  fi
  if [ "$mode" = stall ] && [ "$s" = 3 ] && [ ! -f "$SWEEP_RUN_DIR/stalled" ]; then
    touch "$SWEEP_RUN_DIR/stalled"
    sleep 1000
  fi
  if [ "$mode" = crash ] && [ "$s" = 4 ] && [ ! -f "$SWEEP_RUN_DIR/crashed" ]; then
    touch "$SWEEP_RUN_DIR/crashed"
    kill -9 $$
  fi
  if [ $((s % 3)) = 0 ] || [ "$stop" = 1 ]; then
    echo "$s" > "$ckpt"
    echo "{\"event\":\"checkpoint\",\"step\":$s,\"tokens\":$((s * 64))}"
    echo "{\"event\":\"eval\",\"split\":\"val\",\"step\":$s,\"tokens\":$((s * 64)),\"loss\":$loss}"
  fi
  if [ "$stop" = 1 ]; then
    echo "{\"event\":\"end\",\"status\":\"preempted\",\"step\":$s,\"reason\":\"SIGTERM\"}"
    exit 75
  fi
done
if [ "$mode" = no-test ]; then
  echo "{\"event\":\"end\",\"status\":\"done\",\"step\":$steps}"
  exit 0
fi
loss_at "$steps"
echo "{\"event\":\"end\",\"status\":\"done\",\"step\":$steps,\"tokens\":$((steps * 64)),\"test_loss\":$loss}"
