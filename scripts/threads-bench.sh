#!/usr/bin/env bash
# threads-bench.sh: the same tact run with the default thread count, with
# --threads 1 and with --threads 2, on an idle machine and beside two CPU
# burners (yes > /dev/null), interleaved (default, 1, 2, default, 1, 2, ...)
# so drifting load from other work hits every variant alike. Prints each
# run, then a markdown table: medians, and the ratio of the default's
# total time to the faster fixed choice's (docs/inference.md#threads).
#
#   scripts/threads-bench.sh [-r ROUNDS] BIN MODEL...
#
# Each run: tact run --model MODEL --seed 7 --no-prompt-cache --allow-tools
# list_files --max-tokens 48 "list the files", in a fresh workspace holding
# one file. The burners are killed however the script ends.
set -euo pipefail

rounds=3
if [ "${1:-}" = -r ]; then
	rounds=$2
	shift 2
fi
if [ $# -lt 2 ]; then
	echo "usage: $0 [-r ROUNDS] BIN MODEL..." >&2
	exit 2
fi
bin=$(realpath "$1")
shift

work=$(mktemp -d)
burners=()
stop_burners() {
	for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${burners[@]}"; do wait "$p" 2>/dev/null || true; done
	burners=()
}
trap 'stop_burners; rm -rf "$work"' EXIT
mkdir "$work/ws"
echo hello >"$work/ws/a.txt"

# run MODEL THREADS: prints "SECONDS CHOSEN" (CHOSEN: the threads the run
# used, from its -v line).
run() {
	local start end
	start=$(date +%s.%N)
	(cd "$work/ws" && "$bin" run -v --model "$1" --threads "$2" --seed 7 --no-prompt-cache \
		--allow-tools list_files --max-tokens 48 --json "list the files" >/dev/null 2>"$work/err") || true
	end=$(date +%s.%N)
	printf '%.2f %s\n' "$(echo "$end - $start" | bc)" \
		"$(sed -n 's/.*msg="llama.cpp threads: \([0-9]*\)".*/\1/p' "$work/err" | head -1)"
}

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }

results="$work/results"
: >"$results"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
for model in "$@"; do
	name=$(basename "$model")
	for cond in idle burners; do
		if [ "$cond" = burners ]; then
			yes >/dev/null &
			burners+=($!)
			yes >/dev/null &
			burners+=($!)
			sleep 1
		fi
		for r in $(seq "$rounds"); do
			for v in 0 1 2; do
				read -r secs chosen < <(run "$model" "$v")
				echo "$name $cond threads=$v round=$r ${secs}s chosen=$chosen loadavg=$(cut -d' ' -f1,4 /proc/loadavg)"
				echo "$name $cond $v $secs $chosen" >>"$results"
			done
		done
		stop_burners
	done
done

echo
echo "Times are medians; the ratio compares totals over the interleaved rounds (default / the faster fixed choice), which the machine's drifting load affects alike."
echo
echo "| model | condition | default (threads chosen) | --threads 1 | --threads 2 | default / best fixed (totals) |"
echo "|---|---|---|---|---|---|"
for model in "$@"; do
	name=$(basename "$model")
	for cond in idle burners; do
		pick() { awk -v m="$name" -v c="$cond" -v t="$1" '$1==m && $2==c && $3==t {print $4}' "$results"; }
		d=$(pick 0 | median)
		one=$(pick 1 | median)
		two=$(pick 2 | median)
		chosen=$(awk -v m="$name" -v c="$cond" '$1==m && $2==c && $3==0 {print $5}' "$results" | sort | uniq -c | awk '{printf "%s%sx%s", sep, $1, $2; sep=", "}')
		ratio=$(awk -v m="$name" -v c="$cond" '$1==m && $2==c {sum[$3] += $4} END {best = sum[1] < sum[2] ? sum[1] : sum[2]; printf "%.2f", sum[0] / best}' "$results")
		echo "| $name | $cond | ${d} s ($chosen) | ${one} s | ${two} s | $ratio |"
	done
done
