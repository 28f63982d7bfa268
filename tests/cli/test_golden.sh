#!/bin/sh
# test_golden.sh - the quick set of tests/golden/golden.sh: the shipped
# scenarios that run in under a second, byte for byte against the hashes
# stored before the training-layer refactor.  `make golden-check` (a CI
# stage) checks every shipped scenario.
set -u
exec sh "${SRCDIR:-.}/tests/golden/golden.sh" quick
