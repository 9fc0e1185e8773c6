# shellcheck shell=bash
# Start a throwaway PostgreSQL server for the storage tests and export its URL.
#
#   source .ci/postgres.sh      # then: pytest  (storage tests also run against PostgreSQL)
#   polydom_pg_stop             # stop the server and delete its data directory
#
# Installs Debian's `postgresql` package when no server binaries are present (needs root),
# creates a cluster in a fresh temporary directory, starts it on 127.0.0.1 on a free port
# (as the `postgres` OS user when run as root), creates the database `polydom_test` and
# exports POLYDOM_TEST_PG_URL=postgresql+psycopg://postgres@127.0.0.1:PORT/polydom_test.
# Meant to be sourced: it never exits the calling shell; on failure it prints why, leaves
# POLYDOM_TEST_PG_URL unset (the PostgreSQL tests then skip) and returns non-zero.

_polydom_pg_start() {
    local bindir pgdata port run
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        if [ "$(id -u)" != 0 ]; then
            echo "postgres.sh: PostgreSQL is not installed and we are not root" >&2
            return 1
        fi
        echo "postgres.sh: installing Debian's postgresql package" >&2
        apt-get update -qq >/dev/null &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null ||
            { echo "postgres.sh: apt-get install postgresql failed" >&2; return 1; }
    fi
    bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    pgdata=$(mktemp -d /tmp/polydom-pg.XXXXXX) || return 1
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    if [ "$(id -u)" = 0 ]; then
        chown postgres:postgres "$pgdata"
        run="runuser -u postgres --"
    else
        run=""
    fi
    $run "$bindir/initdb" -D "$pgdata/data" -U postgres -A trust --no-sync >"$pgdata/initdb.log" 2>&1 ||
        { echo "postgres.sh: initdb failed, see $pgdata/initdb.log" >&2; return 1; }
    $run "$bindir/pg_ctl" -D "$pgdata/data" -l "$pgdata/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $pgdata -c fsync=off" start >/dev/null ||
        { echo "postgres.sh: pg_ctl start failed, see $pgdata/server.log" >&2; return 1; }
    $run "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres polydom_test ||
        { echo "postgres.sh: createdb failed" >&2; return 1; }
    export POLYDOM_TEST_PG_DATA="$pgdata"
    export POLYDOM_TEST_PG_BIN="$bindir"
    export POLYDOM_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$port/polydom_test"
    echo "POLYDOM_TEST_PG_URL=$POLYDOM_TEST_PG_URL"
}

polydom_pg_stop() {
    [ -n "${POLYDOM_TEST_PG_DATA:-}" ] || return 0
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$POLYDOM_TEST_PG_BIN/pg_ctl" -D "$POLYDOM_TEST_PG_DATA/data" -m fast stop >/dev/null
    else
        "$POLYDOM_TEST_PG_BIN/pg_ctl" -D "$POLYDOM_TEST_PG_DATA/data" -m fast stop >/dev/null
    fi
    rm -rf "$POLYDOM_TEST_PG_DATA"
    unset POLYDOM_TEST_PG_URL POLYDOM_TEST_PG_DATA POLYDOM_TEST_PG_BIN
}

_polydom_pg_start
