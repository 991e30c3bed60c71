#!/usr/bin/env bash
# tests/docs/words_test.sh SOURCE_DIR: no tracked file speaks of the team's own work (its numbered
# stops, its sessions): a comment or a document that needs to say when something was measured
# gives the date and the machine ("2026-11-28, 2-core AMD EPYC VM").
# Needs a git checkout (skipped otherwise).
set -uo pipefail
source_dir=${1:-.}
if ! git -C "$source_dir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "words_test: $source_dir is not a git checkout: skipped"
  exit 77
fi
# The brackets keep this file from matching its own pattern.
pattern='\bstops? [0-9]+\b|other session[s]|this sessio[n]'
if found=$(git -C "$source_dir" grep -n -I -i -E "$pattern"); then
  echo "$found"
  echo "words_test: $(echo "$found" | wc -l) line(s) above speak of the team's own work;" \
    "say the date and machine, or why, instead" >&2
  exit 1
fi
echo "words_test: no tracked file matches '$pattern'"
