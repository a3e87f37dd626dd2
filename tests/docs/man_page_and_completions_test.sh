#!/usr/bin/env bash
# vramshim.1 and the completions (//analyzer:man_page, :bash_completion, :zsh_completion) against
# the CLI's own help: every subcommand and option in the page, rendered without warnings; bash
# completing subcommand and option names; zsh parsing its script.
set -euo pipefail

cli=analyzer/vramshim
page=analyzer/vramshim.1
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# groff -ww warns about every roff problem; -z renders without output.
warnings=$(groff -man -ww -z "$page" 2>&1 || true)
[[ -z "$warnings" ]] || fail "groff warns about vramshim.1: $warnings"
text=$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b)
subcommands=$("$cli" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NF && !/^Subcommands:/ {print $1}')
[[ -n "$subcommands" ]] || fail "no subcommands in vramshim --help"
for sub in $subcommands; do
  grep -q "^   vramshim $sub\$" <<<"$text" || fail "vramshim.1 has no section for $sub"
  description=$("$cli" help "$sub" | head -1)
  grep -qF -- "$description" <<<"$text" || fail "vramshim.1 lacks the description of $sub: $description"
  for option in $("$cli" help "$sub" | sed -n '/^Options:/,/^$/p' | grep -oE '(^| |,)--[a-z-]+' | tr -d ' ,'); do
    grep -qF -- "$option" <<<"$text" || fail "vramshim.1 lacks $sub's $option"
  done
done
grep -q '128+N' <<<"$text" || fail "vramshim.1 lacks the exit statuses"
[[ "$("$cli" completion bash)" == "$(cat analyzer/vramshim.bash)" ]] || fail "vramshim.bash differs from vramshim completion bash"

# bash: what the completion offers after these words (the last is the word being completed).
complete_words() {
  bash -c 'source analyzer/vramshim.bash
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _vramshim; printf "%s\n" "${COMPREPLY[@]}"' _ "$@"
}
[[ "$(complete_words vramshim rep | sort | tr '\n' ' ')" == "replay report " ]] ||
  fail "bash: 'vramshim rep' completes to: $(complete_words vramshim rep | tr '\n' ' ')"
[[ "$(complete_words vramshim report --le)" == "--leaks" ]] ||
  fail "bash: 'vramshim report --le' completes to: $(complete_words vramshim report --le)"
complete_words vramshim --ver | grep -qx -- --version || fail "bash: 'vramshim --ver' is not --version"
complete_words vramshim flush --a | grep -qx -- --all || fail "bash: 'vramshim flush --a' is not --all"

if command -v zsh >/dev/null; then
  zsh -n analyzer/_vramshim || fail "zsh cannot parse _vramshim"
  grep -q "'--leaks\[" analyzer/_vramshim || fail "_vramshim lacks report --leaks"
else
  fail "zsh is not installed (tools/bootstrap.sh installs it)"
fi

if ((failures)); then
  exit 1
fi
echo "man page and completions checked"
