# Sourced by the shell tests (tests/installer, tests/slurm): named checks that go on after a
# failure, a free loopback port, and the end of a test.

failures=0

# check DESCRIPTION COMMAND...: the command must succeed; prints "ok: ..." or "FAILED: ...".
check() {
  if "${@:2}"; then echo "ok: $1"; else echo "FAILED: $1" >&2; failures=$((failures + 1)); fi
}

# A TCP port nothing listens on now on 127.0.0.1 (the kernel's pick, released at once).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# finish_checks NAME: exits 1 when a check failed, else says all passed.
finish_checks() {
  if ((failures)); then
    echo "$1: $failures check(s) failed" >&2
    exit 1
  fi
  echo "$1: all checks passed"
}
