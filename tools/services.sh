#!/usr/bin/env bash
# Start what the tests and the demo need, when it is not already running.
#   tools/services.sh redis   Redis on 127.0.0.1:6379 (uses one that answers, else starts one)
set -euo pipefail

redis_up() {
  python3 - <<'PY'
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", 6379), timeout=1)
    s.sendall(b"PING\r\n")
    sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)
except OSError:
    sys.exit(1)
PY
}

case "${1:-}" in
  redis)
    if redis_up; then exit 0; fi
    if ! command -v redis-server >/dev/null 2>&1; then
      echo "services: redis-server not found; installing it with apt-get" >&2
      (apt-get update -qq && apt-get install -y -qq redis-server) >/dev/null
    fi
    mkdir -p var
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir "$(pwd)/var" --logfile "$(pwd)/var/redis.log"
    for _ in $(seq 50); do redis_up && exit 0; sleep 0.1; done
    echo "services: Redis did not start; see var/redis.log" >&2
    exit 1
    ;;
  *)
    echo "usage: tools/services.sh redis" >&2
    exit 2
    ;;
esac
