# The C style (.clang-format), with the pinned clang-format series
# (scripts/clang-format.sh installs it under build/tools/ when missing).
#
#   make format         rewrite every tracked .c/.h file in place
#   make format-check   list the files that differ and fail (a CI step)

# fork/ is mongo-c-driver's code (the pull requests, and the stubs laid over
# its tree in fork/master/*/unpatched/): upstream's .clang-format holds
# there, which make check-fork applies.
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' ':!:fork/' 2>/dev/null)

.PHONY: format format-check

format:
	@cf=$$(scripts/clang-format.sh) && $$cf -i $(FORMAT_FILES)

format-check:
	@cf=$$(scripts/clang-format.sh) && bad="" && \
	for f in $(FORMAT_FILES); do \
	  $$cf --dry-run -Werror "$$f" >/dev/null 2>&1 || bad="$$bad $$f"; \
	done; \
	if [ -n "$$bad" ]; then \
	  echo "format-check: not formatted with $$($$cf --version | sed 's/.*version //'):$$bad"; \
	  echo "format-check: run 'make format'"; exit 1; \
	fi; \
	echo "format-check: $(words $(FORMAT_FILES)) files formatted ($$($$cf --version | sed 's/.*version //'))"
