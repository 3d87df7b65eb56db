#!/usr/bin/env bash
# Start what the tests and the demo need, when it is not already running.
#   tools/services.sh redis      Redis on 127.0.0.1:6379 (uses one that answers, else starts one)
#   tools/services.sh rabbitmq   RabbitMQ on 127.0.0.1:5672 (uses one that answers, else starts
#                                the installed server) and the tests' virtual host
#   tools/services.sh chromium   Debian's Chromium at /usr/bin/chromium for the fleet page's
#                                browser tests (tests/ui), installed with apt-get when missing
set -euo pipefail

RABBITMQ_VHOST=tfcompat-delivery

port_up() {
  python3 - "$1" "$2" <<'PY'
import socket, sys
port, probe = int(sys.argv[1]), sys.argv[2]
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=1)
    if probe == "redis":
        s.sendall(b"PING\r\n")
        sys.exit(0 if s.recv(16).startswith(b"+PONG") else 1)
    s.sendall(b"AMQP\x00\x00\x09\x01")
    sys.exit(0 if s.recv(8) else 1)
except OSError:
    sys.exit(1)
PY
}

case "${1:-}" in
  redis)
    if port_up 6379 redis; then exit 0; fi
    if ! command -v redis-server >/dev/null 2>&1; then
      echo "services: redis-server not found; installing it with apt-get" >&2
      (apt-get update -qq && apt-get install -y -qq redis-server) >/dev/null
    fi
    mkdir -p var
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir "$(pwd)/var" --logfile "$(pwd)/var/redis.log"
    for _ in $(seq 50); do port_up 6379 redis && exit 0; sleep 0.1; done
    echo "services: Redis did not start; see var/redis.log" >&2
    exit 1
    ;;
  rabbitmq)
    if ! command -v rabbitmqctl >/dev/null 2>&1; then
      echo "services: no RabbitMQ installed; its broker tests will be skipped" >&2
      exit 0
    fi
    if ! port_up 5672 amqp; then
      rabbitmq-server -detached || true
    fi
    rabbitmqctl await_startup --timeout 120 >/dev/null
    if ! rabbitmqctl list_vhosts --quiet | grep -qx "$RABBITMQ_VHOST"; then
      rabbitmqctl add_vhost "$RABBITMQ_VHOST" >/dev/null
    fi
    rabbitmqctl set_permissions -p "$RABBITMQ_VHOST" guest '.*' '.*' '.*' >/dev/null
    ;;
  chromium)
    if [ -x /usr/bin/chromium ]; then exit 0; fi
    echo "services: /usr/bin/chromium not found; installing Debian's chromium with apt-get" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
      >/dev/null
    test -x /usr/bin/chromium
    ;;
  *)
    echo "usage: tools/services.sh redis|rabbitmq|chromium" >&2
    exit 2
    ;;
esac
