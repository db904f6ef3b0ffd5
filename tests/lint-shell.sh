#!/bin/sh
# Usage: tests/lint-shell.sh SOURCE_DIR
#
# The shell of the repository (CONTRIBUTING.md, "Shell"): shellcheck finds
# nothing at the warning level, and every script says how it is called (a
# "# Usage:" line in its opening comment) and stops at the first failed
# command (set -eu, or set -euo pipefail). A library of scripts/lib/ is
# sourced: it takes its caller's options and carries a shellcheck shell
# directive instead. Exits 77 (skipped) where shellcheck is not installed.
set -eu
cd "$1"
command -v shellcheck >/dev/null || { echo "SKIP: shellcheck is not installed"; exit 77; }
if [ -d .git ]; then
  files=$(git ls-files '*.sh' .ci/run)
else
  files="$(find . \( -name 'build*' -o -name dist \) -prune -o -name '*.sh' -print | sort) .ci/run"
fi
bad=0
for f in $files; do
  awk '/^# Usage: / { f = 1; exit } !/^#/ { exit } END { exit !f }' "$f" || { echo "$f: no '# Usage:' line in its opening comment"; bad=1; }
  case $f in
    *scripts/lib/*) ;;
    *) grep -qE '^set -eu(o pipefail)?$' "$f" || { echo "$f: no 'set -eu' line"; bad=1; } ;;
  esac
done
# shellcheck disable=SC2086 # one word per file
shellcheck -S warning $files || bad=1
[ "$bad" -eq 0 ] && echo "lint-shell: $(echo $files | wc -w) scripts, shellcheck clean, each with its usage and set -eu"
exit "$bad"
