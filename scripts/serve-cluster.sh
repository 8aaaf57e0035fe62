#!/usr/bin/env bash
# Starts N `basalt serve` replicas and nginx in front of them, all on loopback (docs/server.md, "Scale-out").
#
#   scripts/serve-cluster.sh N [--port P] [--dir DIR] [--basalt PATH] [-- SERVE_OPTIONS...]
#
# nginx (run as this user, with its own config and prefix in DIR) listens on 127.0.0.1:P (default 8080; 0 picks a
# free port, written to DIR/front.port) and spreads requests with `hash $prefix_key consistent`: requests carrying
# the same X-Prefix-Key header reach the same replica, the one whose prefix cache holds that prefix; requests without
# the header are spread by request id. A replica that refuses connections or fails (502/503/504) is skipped
# (proxy_next_upstream). Streams pass through unbuffered (proxy_buffering off). Each replica gets SERVE_OPTIONS
# (default -m target) and writes its port to DIR/replica-K.port; logs are in DIR. SIGTERM/SIGINT stops everything.
set -euo pipefail

usage() { sed -n '2,13p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
n="$1"; shift
case "$n" in ''|*[!0-9]*) echo "serve-cluster.sh: N must be a positive integer, not '$n'" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "serve-cluster.sh: N must be at least 1" >&2; exit 2; }
front_port=8080
dir=""
basalt="$(cd "$(dirname "$0")/.." && pwd)/build/bin/basalt"
while [ $# -gt 0 ]; do
    case "$1" in
        --port) front_port="$2"; shift 2 ;;
        --dir) dir="$2"; shift 2 ;;
        --basalt) basalt="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "serve-cluster.sh: unknown option '$1'" >&2; usage ;;
    esac
done
serve_opts=("$@")
[ ${#serve_opts[@]} -gt 0 ] || serve_opts=(-m target)
nginx_bin="$(command -v nginx || true)"
[ -n "$nginx_bin" ] || nginx_bin=/usr/sbin/nginx
[ -x "$nginx_bin" ] || { echo "serve-cluster.sh: nginx is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
[ -x "$basalt" ] || { echo "serve-cluster.sh: no basalt binary at $basalt (build first, or --basalt PATH)" >&2; exit 1; }
[ -n "$dir" ] || dir="$(mktemp -d /tmp/basalt-cluster.XXXXXX)"
mkdir -p "$dir/tmp"
dir="$(cd "$dir" && pwd)"

pids=()
stop() {
    trap - TERM INT EXIT
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap 'stop; exit 0' TERM INT
trap stop EXIT

for k in $(seq 1 "$n"); do
    rm -f "$dir/replica-$k.port"
    "$basalt" serve --port 0 --port-file "$dir/replica-$k.port" "${serve_opts[@]}" >"$dir/replica-$k.log" 2>&1 &
    pids+=($!)
    echo $! >"$dir/replica-$k.pid"
done
for k in $(seq 1 "$n"); do
    for _ in $(seq 1 600); do
        [ -s "$dir/replica-$k.port" ] && break
        kill -0 "${pids[$((k - 1))]}" 2>/dev/null || { echo "serve-cluster.sh: replica $k failed:" >&2; cat "$dir/replica-$k.log" >&2; exit 1; }
        sleep 0.05
    done
    [ -s "$dir/replica-$k.port" ] || { echo "serve-cluster.sh: replica $k did not start" >&2; exit 1; }
done
if [ "$front_port" = 0 ]; then
    front_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fi

{
    cat <<CONF
# Written by scripts/serve-cluster.sh: nginx in front of $n basalt serve replicas.
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log warn;
events { worker_connections 4096; }
http {
    log_format upstream '\$remote_addr "\$request" \$status key="\$http_x_prefix_key" upstream=\$upstream_addr';
    access_log $dir/nginx-access.log upstream;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    client_max_body_size 4m;
    # The affinity key: the client's X-Prefix-Key header (same shared prefix -> same replica -> prefix-cache hits);
    # without it, the request id (spread evenly).
    map \$http_x_prefix_key \$prefix_key {
        ""      \$request_id;
        default \$http_x_prefix_key;
    }
    upstream basalt {
        hash \$prefix_key consistent;
CONF
    for k in $(seq 1 "$n"); do
        echo "        server 127.0.0.1:$(cat "$dir/replica-$k.port") max_fails=1 fail_timeout=10s;"
    done
    cat <<CONF
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$front_port;
        location / {
            proxy_pass http://basalt;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;          # Server-Sent Events pass through as they are written
            proxy_cache off;
            proxy_read_timeout 600s;
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout http_502 http_503 http_504;
            proxy_next_upstream_tries $n;
            add_header X-Upstream \$upstream_addr always;
        }
    }
}
CONF
} >"$dir/nginx.conf"
"$nginx_bin" -p "$dir" -e "$dir/nginx-error.log" -c "$dir/nginx.conf" &
pids+=($!)
for _ in $(seq 1 200); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $front_port), 0.2)" 2>/dev/null && break
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "serve-cluster.sh: nginx failed:" >&2; cat "$dir/nginx-error.log" >&2; exit 1; }
    sleep 0.05
done
echo "$front_port" >"$dir/front.port.tmp" && mv "$dir/front.port.tmp" "$dir/front.port"
echo "serve-cluster.sh: $n replicas behind nginx at http://127.0.0.1:$front_port (files in $dir)" >&2
wait
