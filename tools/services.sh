#!/usr/bin/env bash
# Start what the tests need, when it is not already running, and say what is used.
#   tools/services.sh redis      Redis on 127.0.0.1:$TFCOMPAT_TEST_REDIS_PORT (default 6379):
#                                uses the Redis that answers there (and says so), starts
#                                redis-server there when nothing answers, and stops with an
#                                error when something else answers (not a Redis, or one that
#                                wants a password): the tests never run on a stranger's port
#   tools/services.sh rabbitmq   RabbitMQ on 127.0.0.1:5672 (uses one that answers, else starts
#                                the installed server) and adds the broker tests' virtual host
#                                $TFCOMPAT_TEST_RABBITMQ_VHOST (default tfcompat-delivery),
#                                saying so when it adds it
#   tools/services.sh rabbitmq-remove   deletes that virtual host again (make test runs it
#                                after the suite)
#   tools/services.sh chromium   Debian's Chromium at /usr/bin/chromium for the fleet page's
#                                browser tests (tests/ui), installed with apt-get when missing
set -euo pipefail

RABBITMQ_VHOST=${TFCOMPAT_TEST_RABBITMQ_VHOST:-tfcompat-delivery}
REDIS_PORT=${TFCOMPAT_TEST_REDIS_PORT:-6379}

# Exit 0: the service answers on the port; 1: nothing listens; 3: something else answers
# (for redis: not a Redis, or a Redis that wants a password: -NOAUTH).
port_up() {
  python3 - "$1" "$2" <<'PY'
import socket, sys
port, probe = int(sys.argv[1]), sys.argv[2]
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=1)
except OSError:
    sys.exit(1)
try:
    s.settimeout(2)
    if probe == "redis":
        s.sendall(b"PING\r\n")
        sys.exit(0 if s.recv(16).startswith(b"+PONG") else 3)
    s.sendall(b"AMQP\x00\x00\x09\x01")
    sys.exit(0 if s.recv(8) else 3)
except OSError:
    sys.exit(3)
PY
}

case "${1:-}" in
  redis)
    found=0
    port_up "$REDIS_PORT" redis || found=$?
    if [ "$found" = 0 ]; then
      echo "services: the tests use the Redis answering on 127.0.0.1:$REDIS_PORT" \
        "(the tests empty the databases they use; TFCOMPAT_TEST_REDIS_PORT picks another port)" >&2
      exit 0
    fi
    if [ "$found" = 3 ]; then
      echo "services: 127.0.0.1:$REDIS_PORT answers, but not as a Redis the tests can use" \
        "(another service, or a Redis that wants a password); set TFCOMPAT_TEST_REDIS_PORT" \
        "to a free port and this starts a Redis of its own there" >&2
      exit 1
    fi
    if ! command -v redis-server >/dev/null 2>&1; then
      echo "services: redis-server not found; installing it with apt-get" >&2
      (apt-get update -qq && apt-get install -y -qq redis-server) >/dev/null
    fi
    mkdir -p var
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" \
      --appendonly no --dir "$(pwd)/var" --logfile "$(pwd)/var/redis-$REDIS_PORT.log"
    for _ in $(seq 50); do
      if port_up "$REDIS_PORT" redis; then
        echo "services: started redis-server on 127.0.0.1:$REDIS_PORT for the tests" \
          "(log var/redis-$REDIS_PORT.log; stop it with: redis-cli -p $REDIS_PORT shutdown)" >&2
        exit 0
      fi
      sleep 0.1
    done
    echo "services: Redis did not start; see var/redis-$REDIS_PORT.log" >&2
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
      echo "services: adding virtual host $RABBITMQ_VHOST to the RabbitMQ on" \
        "127.0.0.1:5672 for the broker tests, with all permissions for guest;" \
        "tools/services.sh rabbitmq-remove deletes it (make test does, after the suite)" >&2
      rabbitmqctl add_vhost "$RABBITMQ_VHOST" >/dev/null
    else
      echo "services: the broker tests use the virtual host $RABBITMQ_VHOST on the" \
        "RabbitMQ on 127.0.0.1:5672 (it exists already)" >&2
    fi
    rabbitmqctl set_permissions -p "$RABBITMQ_VHOST" guest '.*' '.*' '.*' >/dev/null
    ;;
  rabbitmq-remove)
    if ! command -v rabbitmqctl >/dev/null 2>&1; then exit 0; fi
    if rabbitmqctl list_vhosts --quiet 2>/dev/null | grep -qx "$RABBITMQ_VHOST"; then
      rabbitmqctl delete_vhost "$RABBITMQ_VHOST" >/dev/null
      echo "services: deleted the broker tests' virtual host $RABBITMQ_VHOST" \
        "from the RabbitMQ on 127.0.0.1:5672" >&2
    fi
    ;;
  chromium)
    if [ -x /usr/bin/chromium ]; then exit 0; fi
    echo "services: /usr/bin/chromium not found; installing Debian's chromium with apt-get" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
      >/dev/null
    test -x /usr/bin/chromium
    ;;
  *)
    echo "usage: tools/services.sh redis|rabbitmq|rabbitmq-remove|chromium" >&2
    exit 2
    ;;
esac
