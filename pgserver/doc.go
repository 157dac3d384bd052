// Package pgserver runs the managed ("embedded") PostgreSQL server that
// memstream uses when database.url is "embedded" (SPEC §2).
//
// It uses the PostgreSQL binaries installed on the machine: on first use it
// runs initdb in Config.DataDir, then starts the server with pg_ctl on a
// loopback port, creates the database and the vector and pg_trgm extensions.
// The data directory outlives memstream; a server left running by a memstream
// process that died is found through postmaster.pid and reused.
//
// PostgreSQL refuses to run as root. When memstream runs as root (as CI does)
// the server runs as the unprivileged "postgres" system user (or "nobody"),
// and the data directory is handed over to that user. That user must be
// able to enter every parent of the data directory; when it cannot (a clone
// under /root, a mktemp -d), the cluster is made in a new directory under
// Config.RelocateDir (/var/lib/memstream) and the configured path becomes a
// symlink to it. The log says where it lives.
//
// Several processes may use one server: each Server holds a shared flock on
// DIR.users, and Stop shuts the server down only when no other holder is
// left (Release, for one-shot commands, also never stops a server the
// caller found running). A process that dies drops its lock with it.
//
// Authentication is "trust": the server listens on 127.0.0.1 and on a unix
// socket inside the data directory only, and is meant for one machine's
// development and demo use. A real deployment sets database.url.
package pgserver
