#!/usr/bin/env bash
# Loads anvil's completion for bash, zsh and fish, the way each shell loads an installed one,
# and completes partial command lines: subcommands, flags, policy names, --network values,
# plugin directories.
#   tests/install/completions_test.sh BASH_FILE ZSH_DIR FISH_FILE
# ZSH_DIR holds _anvil (zsh finds completions on $fpath). Prints "N passed, N failed".
set -uo pipefail
bash_file=$1 zsh_dir=$2 fish_file=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/anvil-completions-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/plugins/hello-plugin" "$work/plugins/other"
touch "$work/plugins/hello-plugin/anvil-plugin.toml"

passed=0 failed=0
check() {  # shell, partial line, expected candidate, candidates printed
  local shell=$1 line=$2 want=$3 got=$4
  if grep -qxF -- "$want" <<<"$got"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: "%s" should offer "%s"; got:\n%s\n' "$shell" "$line" "$want" "$got" >&2
  fi
}

bash_complete() {  # the candidates bash offers for the partial line $1
  bash --norc --noprofile -c '
    source "$1"
    read -ra COMP_WORDS <<<"$2"
    [[ $2 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    _anvil
    printf "%s\n" "${COMPREPLY[@]}"' bash "$bash_file" "$1"
}

fish_complete() {
  fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$fish_file" "$1" | cut -f1
}

cases=(
  "anvil sa|sandbox"
  "anvil pl|plugin"
  "anvil sandbox --pol|--policy"
  "anvil sandbox --policy r|read-only"
  "anvil sandbox --policy work|workspace-write"
  "anvil sandbox --network pr|proxy"
  "anvil sandbox --read-access f|full"
  "anvil run --appr|--approve"
  "anvil plugin ins|inspect"
  "anvil plugin inspect $work/plugins/hel|$work/plugins/hello-plugin/"
  "anvil run $work/plugins/hel|$work/plugins/hello-plugin/"
  "anvil serve --plugin-dir $work/plugins/oth|$work/plugins/other/"
  "anvil help doc|doctor"
  "anvil doctor --j|--json"
)
# Paths are compared by their last component: zsh offers one component at a time.
norm() { sed 's:/$::; s:.*/::'; }
lines=()
for c in "${cases[@]}"; do lines+=("${c%|*}"); done
# One zsh session for every line (a real ZLE through zpty; zsh_complete.zsh).
zsh_all=$(zsh -f "$here/zsh_complete.zsh" "$zsh_dir" "${lines[@]}")
n=0
for c in "${cases[@]}"; do
  n=$((n + 1))
  line=${c%|*} want=$(norm <<<"${c##*|}")
  check bash "$line" "$want" "$(bash_complete "$line" | norm)"
  check fish "$line" "$want" "$(fish_complete "$line" | norm)"
  check zsh "$line" "$want" "$(awk -v n="$n" '/^@@@ /{on = ($2 == n); next} on' <<<"$zsh_all" | norm)"
done
echo "completions: $passed passed, $failed failed"
((failed == 0))
