#!/bin/bash
# CI step: every tracked C file is formatted with the pinned clang-format
# (.clang-format, mk/format.mk). The fork's series is checked against
# upstream's own .clang-format by its own step.
set -euo pipefail
cd "$(dirname "$0")/../.."
make --no-print-directory format-check
