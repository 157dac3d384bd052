package pgserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Defaults for Config.
const (
	DefaultDataDir  = ".memstream/postgres"
	DefaultPort     = 54329
	DefaultUser     = "memstream"
	DefaultDatabase = "memstream"
	// DefaultRelocateDir is where a cluster goes, as root, when the server
	// user cannot enter the configured data dir's parents.
	DefaultRelocateDir = "/var/lib/memstream"
)

// ErrNotInstalled means the PostgreSQL server binaries (postgres, initdb,
// pg_ctl) were not found. Tests use it to skip.
var ErrNotInstalled = errors.New("PostgreSQL server binaries not found")

// installHint is the fix printed with every "something is not installed"
// error (SPEC §2: say exactly which command installs it).
func installHint(major string) string {
	if major == "" {
		major = "15"
	}
	return "run scripts/install-deps.sh (or: apt-get install postgresql postgresql-contrib postgresql-server-dev-" + major +
		" && build pgvector from source: make USE_PGXS=1 && make install)"
}

// readyTimeout bounds how long Start waits for a server to accept
// connections after pg_ctl returned (or when reusing a running one).
const readyTimeout = 60 * time.Second

// Config configures the managed server.
type Config struct {
	// DataDir holds the cluster; it is created (initdb) on first use and
	// kept across restarts. Default ".memstream/postgres".
	DataDir string
	// Port is the TCP port on 127.0.0.1. Default 54329.
	Port int
	// BinDir holds postgres, initdb and pg_ctl. Default: FindBinDir.
	BinDir string
	// User is the database superuser created by initdb. Default "memstream".
	User string
	// Database is created if missing. Default "memstream".
	Database string
	// RelocateDir holds clusters whose configured data dir the server user
	// cannot reach (memstream runs as root, the server as user postgres,
	// and a parent such as /root or a mktemp -d is 0700). The cluster is
	// made in a new directory under it and the configured path becomes a
	// symlink to that. Default "/var/lib/memstream".
	RelocateDir string
	// Memory is the RAM the server sizes shared_buffers and
	// effective_cache_size from; 0 means the machine's (or its cgroup's
	// limit, if lower), read at every start.
	Memory int64
}

// WithDefaults returns c with empty fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.RelocateDir == "" {
		c.RelocateDir = DefaultRelocateDir
	}
	return c
}

func (c Config) validate() error {
	if c.Port < 1 || c.Port > 65535 {
		return fmt.Errorf("pgserver: port %d out of range 1-65535", c.Port)
	}
	// PostgreSQL truncates identifiers at 63 bytes; a silently different
	// name would make the URL point at a database that does not exist.
	if len(c.User) > 63 {
		return fmt.Errorf("pgserver: user %q longer than 63 bytes", c.User)
	}
	if len(c.Database) > 63 {
		return fmt.Errorf("pgserver: database %q longer than 63 bytes", c.Database)
	}
	return nil
}

// Server is one user's handle on a running managed PostgreSQL server.
//
// Several processes (serve, and one-shot commands beside it) may use the
// server of one data directory at once. Each Server holds a shared lock on
// DIR.users from Start until Stop or Release, and the server is stopped
// only by a handle that finds no other holder: a process that exits or
// dies drops its lock with it, so the count never goes stale.
type Server struct {
	cfg      Config // DataDir absolute (the cluster itself), BinDir resolved
	lockBase string // the configured data dir, absolute: DIR.lock and DIR.users
	log      *slog.Logger
	owner    *osUser // nil: the server runs as the current user
	major    string
	started  bool     // this Start ran pg_ctl start (it did not reuse a server)
	users    *os.File // holds the shared lock on DIR.users; nil once released
}

// Deps are what a server reports to.
type Deps struct {
	// Logger receives the server's life (start, reuse, stop); nil discards.
	Logger *slog.Logger
}

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// Start starts the server in cfg.DataDir, running initdb first if the
// directory holds no cluster yet, and returns once the database and the
// vector, pg_trgm and btree_gin extensions exist. A server already running on the data
// directory (another memstream process's, or one left by a process that
// died) is reused.
//
// Concurrent Starts on the same data directory, from any process, are
// serialised with a lock file next to it.
func Start(ctx context.Context, deps Deps, cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := deps.logger()
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pgserver: data dir %s: %w", cfg.DataDir, err)
	}
	cfg.DataDir = dir
	if cfg.BinDir == "" {
		if cfg.BinDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	} else if !hasServerBinaries(cfg.BinDir) {
		return nil, fmt.Errorf("pgserver: %w in bin dir %s; %s", ErrNotInstalled, cfg.BinDir, installHint(""))
	}
	major, err := binaryMajor(ctx, cfg.BinDir)
	if err != nil {
		return nil, err
	}
	owner, err := serverOwner()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, lockBase: dir, owner: owner, major: major}
	s.log = log.With(slog.String("data_dir", dir), slog.Int("port", cfg.Port))

	unlock, err := lockFile(ctx, dir+".lock", syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Whether another Server holds the running cluster, checked before this
	// one joins them.
	inUse, err := othersUse(dir)
	if err != nil {
		return nil, err
	}
	if s.users, err = openLocked(ctx, dir+".users", syscall.LOCK_SH); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.releaseUse()
		}
	}()

	if err := s.placeDataDir(log); err != nil {
		return nil, err
	}
	if err := s.prepareDir(); err != nil {
		return nil, err
	}
	if err := s.initdb(ctx); err != nil {
		return nil, err
	}
	if err := s.writeConf(); err != nil {
		return nil, err
	}
	reused, err := s.startOrReuse(ctx, inUse)
	if err != nil {
		return nil, err
	}
	s.started = !reused
	if err := s.bootstrap(ctx, reused); err != nil {
		if !reused && !inUse {
			// Do not leave a server behind that nobody will Stop.
			if serr := s.pgCtlStop(context.WithoutCancel(ctx)); serr != nil {
				s.log.Error("stop postgres after failed start", slog.Any("error", serr))
			}
		}
		return nil, err
	}
	ok = true
	s.log.Info("postgres ready", slog.String("url", s.URL()), slog.Bool("reused", reused), slog.String("version", major))
	return s, nil
}

// Started reports whether Start started the server, rather than reusing
// one that was already running.
func (s *Server) Started() bool { return s.started }

// DataDir is the directory the cluster lives in: the configured one, or,
// when it was relocated for the server user (Config.RelocateDir), the
// directory its symlink points to.
func (s *Server) DataDir() string { return s.cfg.DataDir }

// URL returns the connection URL of the configured database, for example
// postgres://memstream@127.0.0.1:54329/memstream?sslmode=disable.
func (s *Server) URL() string { return s.urlFor(s.cfg.Database) }

func (s *Server) urlFor(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(s.cfg.User),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.cfg.Port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Stop ends this handle's use of the server and shuts the server down
// with pg_ctl's fast mode (open transactions are rolled back, committed
// data is on disk), unless another Server, in this process or another,
// still uses it: then the server keeps running for them. Stopping a server
// that is not running is not an error; neither is a second Stop.
//
// Long-running processes (serve, demo) use Stop: a server they reused from
// a process that died is theirs to stop.
func (s *Server) Stop(ctx context.Context) error { return s.stop(ctx, true) }

// Release ends this handle's use of the server and stops the server only
// if this Start started it and no other Server uses it now. One-shot
// commands use it: a server they found running belongs to someone else.
func (s *Server) Release(ctx context.Context) error { return s.stop(ctx, s.started) }

func (s *Server) stop(ctx context.Context, mayStop bool) error {
	unlock, err := lockFile(ctx, s.lockBase+".lock", syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	s.releaseUse()
	if !mayStop {
		s.log.Info("leaving postgres running: this process did not start it")
		return nil
	}
	inUse, err := othersUse(s.lockBase)
	if err != nil {
		return err
	}
	if inUse {
		s.log.Info("leaving postgres running: another memstream process uses it")
		return nil
	}
	return s.pgCtlStop(ctx)
}

// releaseUse drops this handle's shared lock on DIR.users.
func (s *Server) releaseUse() {
	if s.users != nil {
		_ = s.users.Close()
		s.users = nil
	}
}

// pgCtlStop stops the server if it runs. The caller holds DIR.lock.
func (s *Server) pgCtlStop(ctx context.Context) error {
	pf, err := s.postmaster()
	if err != nil {
		return err
	}
	if pf == nil {
		return nil
	}
	s.log.Info("stopping postgres")
	if out, err := s.run(ctx, "pg_ctl", "stop", "-D", s.cfg.DataDir, "-m", "fast", "-w", "-t", "60"); err != nil {
		return fmt.Errorf("pgserver: pg_ctl stop %s: %w: %s", s.cfg.DataDir, err, out)
	}
	s.log.Info("postgres stopped")
	return nil
}

// startOrReuse starts the server unless one is already running on the data
// directory; it reports whether a running server was reused. inUse says
// whether another Server holds the running one: it is never restarted
// under them.
func (s *Server) startOrReuse(ctx context.Context, inUse bool) (bool, error) {
	pf, err := s.postmaster()
	if err != nil {
		return false, err
	}
	if pf != nil {
		if pf.port == s.cfg.Port && pf.status != "stopping" {
			s.log.Info("reusing running postgres", slog.Int("pid", pf.pid))
			return true, nil
		}
		if inUse {
			return false, fmt.Errorf("pgserver: data dir %s: a server another memstream process uses runs there on port %d (status %q); set database.embedded_port to %d to share it, or stop that process first",
				s.cfg.DataDir, pf.port, pf.status, pf.port)
		}
		// A different port or a half-finished shutdown: restart cleanly.
		s.log.Info("restarting running postgres", slog.Int("pid", pf.pid), slog.Int("running_port", pf.port), slog.String("status", pf.status))
		if out, err := s.run(ctx, "pg_ctl", "stop", "-D", s.cfg.DataDir, "-m", "fast", "-w", "-t", "60"); err != nil {
			return false, fmt.Errorf("pgserver: pg_ctl stop %s: %w: %s", s.cfg.DataDir, err, out)
		}
	}
	s.log.Info("starting postgres", slog.String("bin_dir", s.cfg.BinDir))
	logFile := filepath.Join(s.cfg.DataDir, "postmaster.log")
	out, err := s.run(ctx, "pg_ctl", "start", "-D", s.cfg.DataDir, "-l", logFile, "-w", "-t", strconv.Itoa(int(readyTimeout/time.Second)))
	if err != nil {
		return false, fmt.Errorf("pgserver: pg_ctl start %s: %w: %s\n%s", s.cfg.DataDir, err, out, tail(logFile, 20))
	}
	return false, nil
}

// bootstrap waits until the server accepts connections, then creates the
// database and the extensions memstream needs.
func (s *Server) bootstrap(ctx context.Context, reused bool) error {
	admin, err := s.connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if reused {
		// memstream.conf was just rewritten; apply what does not need a restart.
		if _, err := admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return fmt.Errorf("pgserver: reload config: %w", err)
		}
	}
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", s.cfg.Database).Scan(&exists); err != nil {
		return fmt.Errorf("pgserver: look up database %s: %w", s.cfg.Database, err)
	}
	if !exists {
		s.log.Info("creating database", slog.String("database", s.cfg.Database))
		_, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{s.cfg.Database}.Sanitize())
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") { // duplicate_database
			return fmt.Errorf("pgserver: create database %s: %w", s.cfg.Database, err)
		}
	}

	conn, err := s.connect(ctx, s.cfg.Database)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ext := range []string{"vector", "pg_trgm", "btree_gin"} {
		_, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+ext)
		var pgErr *pgconn.PgError
		// PostgreSQL 15 reports a missing control file as undefined_file,
		// later versions as feature_not_supported.
		if errors.As(err, &pgErr) && (pgErr.Code == "58P01" || pgErr.Code == "0A000") {
			return fmt.Errorf("pgserver: create extension %s in database %s: %w; %s is not installed for PostgreSQL %s in %s: %s",
				ext, s.cfg.Database, err, ext, s.major, s.cfg.BinDir, installHint(s.major))
		}
		if err != nil {
			return fmt.Errorf("pgserver: create extension %s in database %s: %w", ext, s.cfg.Database, err)
		}
	}
	return nil
}

// connect retries until the server accepts connections: after pg_ctl start
// -w it normally does at once, but a reused server may still be recovering.
func (s *Server) connect(ctx context.Context, database string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.urlFor(database))
		if err == nil {
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pgserver: connect to %s: %w (server log: %s)", s.urlFor(database), err, filepath.Join(s.cfg.DataDir, "log"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// initdb creates the cluster unless the data directory already holds one.
func (s *Server) initdb(ctx context.Context) error {
	versionFile := filepath.Join(s.cfg.DataDir, "PG_VERSION")
	b, err := os.ReadFile(versionFile)
	if err == nil {
		if v := strings.TrimSpace(string(b)); v != s.major {
			return fmt.Errorf("pgserver: data dir %s holds a PostgreSQL %s cluster but the binaries in %s are PostgreSQL %s; set the bin dir to PostgreSQL %s's, or upgrade the cluster with pg_upgrade",
				s.cfg.DataDir, v, s.cfg.BinDir, s.major, v)
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pgserver: %w", err)
	}
	entries, err := os.ReadDir(s.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("pgserver: data dir %s is not empty but holds no PostgreSQL cluster (no PG_VERSION); empty it or choose another data_dir", s.cfg.DataDir)
	}

	s.log.Info("initializing postgres cluster", slog.String("bin_dir", s.cfg.BinDir))
	args := []string{
		"-D", s.cfg.DataDir,
		"-U", s.cfg.User,
		// Only loopback and the data dir's own socket listen, see doc.go.
		"--auth=trust",
		"--encoding=UTF8",
		// Not plain C: pg_trgm and full-text search classify characters by
		// the locale's ctype, and C treats every non-ASCII letter as a
		// separator. C.UTF-8 also sorts by code point, which never changes
		// with a glibc upgrade (no index corruption).
		"--locale=C.UTF-8",
		// Detect torn or corrupted pages instead of returning wrong data.
		"--data-checksums",
	}
	out, err := s.run(ctx, "initdb", args...)
	if err != nil && strings.Contains(out, "locale") {
		s.log.Warn("C.UTF-8 locale unavailable, falling back to C", slog.String("initdb_output", out))
		args[slices.Index(args, "--locale=C.UTF-8")] = "--locale=C"
		out, err = s.run(ctx, "initdb", args...)
	}
	if err != nil {
		return fmt.Errorf("pgserver: initdb %s: %w: %s", s.cfg.DataDir, err, out)
	}
	// Our settings live in memstream.conf (rewritten at every start) so that
	// postgresql.conf stays initdb's and the operator's.
	f, err := os.OpenFile(filepath.Join(s.cfg.DataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	_, err = f.WriteString("\n# memstream's settings; ALTER SYSTEM still overrides them.\ninclude_if_exists = 'memstream.conf'\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgserver: append to postgresql.conf: %w", err)
	}
	return nil
}

// writeConf writes memstream.conf, the server settings for this workload.
func (s *Server) writeConf() error {
	socketDir := s.cfg.DataDir
	// A unix socket path is limited to 107 bytes; with a long data dir path
	// the server would not start, so fall back to TCP only.
	if len(socketDir)+len("/.s.PGSQL.65535") > 107 {
		s.log.Warn("data dir path too long for a unix socket; listening on TCP only")
		socketDir = ""
	}
	var b strings.Builder
	b.WriteString("# Written by memstream at every start of the embedded server; do not edit.\n")
	b.WriteString("# Override a setting with ALTER SYSTEM (postgresql.auto.conf wins).\n")
	set := func(name, value, why string) {
		if why != "" {
			fmt.Fprintf(&b, "# %s\n", why)
		}
		fmt.Fprintf(&b, "%s = %s\n", name, value)
	}
	set("listen_addresses", "'127.0.0.1'", "Loopback only: authentication is trust.")
	set("port", strconv.Itoa(s.cfg.Port), "")
	set("unix_socket_directories", quoteConf(socketDir), "The socket stays inside the data dir, private to this server.")
	set("unix_socket_permissions", "0700", "")
	set("max_connections", "100", "Pools of ingest, API and workers on one machine.")
	ram := s.cfg.Memory
	if ram <= 0 {
		ram = machineMemory()
	}
	mem := sizeMemory(ram)
	set("shared_buffers", confBytes(mem.sharedBuffers), "A quarter of the machine's memory (see sizeMemory).")
	set("effective_cache_size", confBytes(mem.effectiveCacheSize), "Three quarters: shared buffers and the page cache.")
	set("work_mem", "16MB", "")
	set("maintenance_work_mem", "512MB", "HNSW index builds are much faster when the graph fits in memory.")
	set("max_parallel_maintenance_workers", "2", "pgvector builds HNSW indexes in parallel.")
	set("fsync", "on", "Durability is never traded for speed: facts are committed before Kafka offsets.")
	set("synchronous_commit", "on", "")
	set("full_page_writes", "on", "")
	set("wal_compression", "on", "Embeddings make large WAL records; compressing them cuts I/O.")
	set("max_wal_size", "2GB", "Fewer forced checkpoints during bulk ingest.")
	set("min_wal_size", "256MB", "")
	set("checkpoint_timeout", "15min", "")
	set("checkpoint_completion_target", "0.9", "")
	set("random_page_cost", "1.1", "Local SSD or page cache.")
	set("jit", "off", "Short OLTP queries: JIT compile time costs more than it saves.")
	set("logging_collector", "on", "Keep a week of logs in data_dir/log, one file per weekday.")
	set("log_directory", "'log'", "")
	set("log_filename", "'postgresql-%a.log'", "")
	set("log_truncate_on_rotation", "on", "")
	set("log_rotation_age", "1d", "")
	set("log_rotation_size", "0", "")
	set("log_min_duration_statement", "2s", "")
	if smallShm() {
		set("dynamic_shared_memory_type", "mmap", "/dev/shm is too small for parallel HNSW builds with maintenance_work_mem (containers default to 64MB).")
	}
	path := filepath.Join(s.cfg.DataDir, "memstream.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("pgserver: write %s: %w", path, err)
	}
	return s.chown(path)
}

// quoteConf quotes a string for postgresql.conf.
func quoteConf(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

// smallShm reports whether /dev/shm has less room than a parallel index
// build may ask for.
func smallShm() bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil {
		return true
	}
	return uint64(st.Bavail)*uint64(st.Bsize) < 1<<30
}

// postmasterFile is what postmaster.pid says about a running server.
type postmasterFile struct {
	pid    int
	port   int
	status string
}

// postmaster returns the server running on the data directory, or nil. A
// postmaster.pid whose process is gone, or is not a postgres (the pid was
// reused after a crash or reboot), is stale: it and the socket lock files
// are removed so that the server can start.
func (s *Server) postmaster() (*postmasterFile, error) {
	path := filepath.Join(s.cfg.DataDir, "postmaster.pid")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	pf := &postmasterFile{}
	pf.pid, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	if len(lines) > 3 {
		pf.port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	}
	if len(lines) > 7 {
		pf.status = strings.TrimSpace(lines[7])
	}
	if pf.pid > 0 && processAlive(pf.pid) && isPostgres(pf.pid) {
		return pf, nil
	}
	s.log.Warn("removing stale postmaster.pid", slog.Int("pid", pf.pid))
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("pgserver: remove stale %s: %w", path, err)
	}
	locks, _ := filepath.Glob(filepath.Join(s.cfg.DataDir, ".s.PGSQL.*"))
	for _, l := range locks {
		_ = os.Remove(l)
	}
	return nil, nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// isPostgres reports whether pid runs the postgres binary. The postmaster
// keeps its command line (only its children retitle themselves), and
// /proc/PID/cmdline is readable across users, unlike /proc/PID/exe.
func isPostgres(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		// No procfs: trust the live pid, as PostgreSQL itself does.
		return !errors.Is(err, os.ErrNotExist) || !procfsMounted()
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	base := filepath.Base(argv0)
	return base == "postgres" || base == "postmaster"
}

func procfsMounted() bool {
	_, err := os.Stat("/proc/self/cmdline")
	return err == nil
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return path + ":\n" + strings.Join(lines, "\n")
}
