# Sourced by tests and benches that run Debian's nginx as a real part.
# nginx_conf_write DIR HTTP-BODY: DIR/nginx.conf for one foreground worker, its
# pid, error log and temporary files in DIR, no access log, HTTP-BODY
# (upstreams, servers) inside http {}.
nginx_conf_write() {
  mkdir -p "$1"
  cat >"$1/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $1/body; proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fcgi; uwsgi_temp_path $1/uwsgi; scgi_temp_path $1/scgi;
$2
}
CONF
}
