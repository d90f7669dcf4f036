#!/usr/bin/env zsh -f
# zsh_complete.zsh FPATH_DIR LINE...: for each partial command line, the candidates zsh's
# completion system offers, one per line, after a line "@@@ N" (N counts from 1). A real
# interactive zsh runs in a pseudo-terminal (zpty) with FPATH_DIR first on $fpath and compinit
# loaded, as for an installed completion; compadd is wrapped to append what it adds to a file;
# then each line is typed with a TAB, and cleared (Ctrl-U) before the next.
zmodload zsh/zpty || { print -u2 "zsh/zpty missing"; exit 3 }
dir=$1
shift
out=$(mktemp /tmp/anvil-zsh-complete-XXXXXX)
zpty anvil_z zsh -f -i
zpty -w anvil_z "PS1=''; fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -d ${(q)out}.dump"
zpty -w anvil_z "compadd() { local -a __m; builtin compadd -O __m \"\$@\"; (( \$#__m )) && print -rl -- \$__m >> ${(q)out}; builtin compadd \"\$@\"; }"
zpty -w anvil_z "zstyle ':completion:*' menu no"
integer n=0
for line in "$@"; do
  (( n++ ))
  print -- "@@@ $n" >> $out
  integer size=$(wc -c < $out)
  zpty -w -n anvil_z "${line}"$'\t'
  # Bounded wait for the completion to run (nothing offered: it ends after 5 s, never hangs).
  for i in {1..100}; do
    (( $(wc -c < $out) > size )) && break
    sleep 0.05
  done
  sleep 0.1
  zpty -w -n anvil_z $'\x15'
done
zpty -d anvil_z
cat $out
rm -f $out $out.dump
