#!/usr/bin/env bash
# make demo: tact's main job on what ships with it, unattended and offline.
#   scripts/demo.sh TACT_BINARY TINY_MODEL
# Writes nothing into the repository: runs are --read-only in the example
# workspace. Exits 0 when every step behaved as expected; the random-weight
# model's run may end with a non-zero code, which is shown and explained.
set -euo pipefail
tact=${1:?usage: scripts/demo.sh TACT_BINARY TINY_MODEL}
model=${2:?usage: scripts/demo.sh TACT_BINARY TINY_MODEL}
ws=examples/workspace
query='How many errors are in app.log, and is the nightly cleanup enabled?'

# The demo must not depend on the user's settings (TACT_TRACE would write a
# file, TACT_JSON change the output) or prompt anyone.
while read -r v; do
  [ "$v" = TACT_LIB_DIR ] || unset "$v"
done < <(compgen -e | grep '^TACT_' || true)
export TACT_NO_INPUT=1

heading() { printf '\n== %s\n' "$*"; }
# show prints a command as one would type it, then runs it.
show() {
  local line='$' a
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./:=,@+-]+$ ]]; then
      line+=" $a"
    else
      line+=" '${a//\'/\'\\\'\'}'"
    fi
  done
  printf '%s\n' "$line"
  "$@"
}

heading "1/3  tact exec: carry out a hand-written plan, no model needed"
show "$tact" exec examples/errors.jsonl --workspace "$ws"

heading "2/3  tact run with the script backend: canned model replies plan and fill in the steps"
show "$tact" run --script examples/script.jsonl --workspace "$ws" --read-only "$query"

heading "3/3  tact run on a generated model"
cat <<EOF
$model is a tiny model with RANDOM weights: the whole plan-and-act loop runs on
llama.cpp, every reply is a valid action, but the answers are nonsense and the
run usually ends without a final answer (a non-zero exit code). For real
answers get a real model (2.7 GB, once):
    $tact models catalog              # known-good small models
    $tact models pull qwen3.5-4b
    $tact run --model qwen3.5-4b --workspace $ws '$query'

The model's plan:
EOF
# The random model's tokenizer spends a token on a few bytes: its prompt
# needs a larger window than a real model's default 8192.
show "$tact" plan --model "$model" --ctx-size 16384 --seed 1 "$query"
echo
echo "The run (read-only: the random model cannot write or run commands):"
rc=0
show "$tact" run --model "$model" --ctx-size 16384 --workspace "$ws" --seed 1 --read-only --timeout 30s "$query" || rc=$?
case $rc in
0) why="success: a final answer" ;;
3) why="failure: the model gave up or a step failed" ;;
4) why="max_iterations: the step budget ran out" ;;
5) why="stalled: the same action three times in a row" ;;
6) why="token_budget: the token budget ran out" ;;
7) why="timeout" ;;
12) why="needs_input: the model asked a question (tact answer RUN goes on)" ;;
*)
  echo "demo: tact run exited $rc, which is not a run's termination reason: that is a bug" >&2
  exit 1
  ;;
esac
cat <<EOF
-> exit code $rc ($why). Expected from random weights; the demo passed.
   Exit codes 3-8 are how scripts tell run outcomes apart (docs/cli.md, Exit codes).
EOF
