#!/usr/bin/env bash
# tests/docs/readme_front_test.sh SOURCE_DIR: README.md stays a front door a newcomer reads in
# five minutes: at most 300 lines, with the two commands (set up and run the app; set up and run
# the tests) as they are, in its first 40 lines, and .ci/run still running the README's test
# command word for word.
set -uo pipefail
source_dir=${1:-.}
source "$(dirname "$0")/../shell/checks.sh"
readme=$source_dir/README.md
app_command='bash installer/bootstrap.sh && build/bin/ringmaster --demo'
test_command='bash installer/bootstrap.sh --tests && ctest --test-dir build --output-on-failure -j2'

lines=$(wc -l <"$readme")
echo "README.md: $lines lines"
check "README.md has at most 300 lines" test "$lines" -le 300
check "the app's command is a line of README.md's first 40" \
  grep -qxF "$app_command" <(head -40 "$readme")
check "the tests' command is a line of README.md's first 40" \
  grep -qxF "$test_command" <(head -40 "$readme")
check ".ci/run runs the README's test command" grep -qxF "$test_command" "$source_dir/.ci/run"
finish_checks readme_front_test
