#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis run on loopback, and that the test role and database exist.
set -euo pipefail

die() { echo "services: $*" >&2; exit 1; }

pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
if ! pg_ready; then
    command -v pg_ctlcluster >/dev/null || die "PostgreSQL is not installed (apt-get install postgresql)."
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    [ -n "$version" ] || die "PostgreSQL is installed but has no cluster (pg_createcluster)."
    echo "Starting PostgreSQL $version" >&2
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || die "could not start PostgreSQL $version."
    for _ in $(seq 30); do pg_ready && break; sleep 0.5; done
    pg_ready || die "PostgreSQL did not come up on 127.0.0.1:5432."
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    command -v redis-server >/dev/null || die "Redis is not installed (apt-get install redis-server)."
    echo "Starting Redis" >&2
    mkdir -p /tmp/practicum-redis
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
        --dir /tmp/practicum-redis --logfile /tmp/practicum-redis/redis.log
    for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.2; done
    redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || die "Redis did not come up on 127.0.0.1:6379."
fi

# The test role: password auth over TCP works with Debian's default pg_hba.conf. SQL goes in on stdin.
psql_admin() {
    if [ "$(id -u)" -eq 0 ]; then su postgres -c "psql -q -tA -v ON_ERROR_STOP=1"; else psql -q -tA -v ON_ERROR_STOP=1 -h 127.0.0.1 -U postgres; fi
}
psql_admin <<'SQL' >/dev/null || die "could not create the PostgreSQL role and database 'practicum' (run as root or a superuser)."
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'practicum') THEN
    CREATE ROLE practicum LOGIN PASSWORD 'practicum' CREATEDB;
  END IF;
END $$;
SELECT 'CREATE DATABASE practicum OWNER practicum'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'practicum')\gexec
SQL
