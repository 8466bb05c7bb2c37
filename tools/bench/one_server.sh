# Sourced by the bench scripts that run one server at a time on $port (tiers.sh,
# concurrency.sh): the PID of the server up now, stopping it (also on exit), and waiting until it
# answers /health.
# shellcheck shell=bash
server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=""
}
trap stop_server EXIT

wait_up() {  # wait_up NAME LOG: returns once $server_pid answers on $port (within WAIT_UP_S
  # seconds, default 120), else shows LOG and exits
  for _ in $(seq 1 $(( ${WAIT_UP_S:-120} * 5 ))); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "$(basename "$0"): $1 did not start" >&2; tail -20 "$2" >&2; exit 1
}
