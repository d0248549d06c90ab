#!/bin/bash
# Two "nodes" on one machine: network namespaces tk0 and tk1 joined by a veth pair named eth0 on
# both sides, with IPv6 fd00::1 / fd00::2 (as in the report's IPv6 master address) and IPv4
# 10.99.0.1 / 10.99.0.2, plus lo. Needs root (ip netns). Usage: netns.sh up|down|check
set -euo pipefail
case "${1:-up}" in
  up)
    ip netns add tk0; ip netns add tk1
    ip link add tkv0 type veth peer name tkv1
    ip link set tkv0 netns tk0; ip link set tkv1 netns tk1
    for n in 0 1; do
      ip -n tk$n link set tkv$n name eth0
      ip -n tk$n link set lo up
      ip -n tk$n addr add 10.99.0.$((n + 1))/24 dev eth0
      ip -n tk$n -6 addr add fd00::$((n + 1))/64 dev eth0 nodad
      ip -n tk$n link set eth0 up
    done
    "$0" check && echo "netns up: tk0 fd00::1 <-> tk1 fd00::2" ;;
  down)
    ip netns del tk0 2>/dev/null || true; ip netns del tk1 2>/dev/null || true ;;
  check)  # a TCP connect from tk0 to a listener in tk1, over IPv6 (no ping on minimal images)
    ip netns exec tk1 python3 -c "import socket,time; s=socket.socket(socket.AF_INET6); s.bind(('fd00::2', 29399)); s.listen(); s.settimeout(5); s.accept()" &
    sleep 0.5
    ip netns exec tk0 python3 -c "import socket; socket.create_connection(('fd00::2', 29399), timeout=3).close()"
    wait ;;
esac
