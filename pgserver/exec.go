package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FindBinDir returns the directory of the PostgreSQL server binaries:
// `pg_config --bindir` if it holds them, else the newest
// /usr/lib/postgresql/*/bin (Debian's layout), else the directory of
// `postgres` on PATH.
func FindBinDir() (string, error) {
	// On Debian, /usr/bin/pg_config may be libpq-dev's, which answers /usr/bin.
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServerBinaries(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil && hasServerBinaries(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("pgserver: %w (looked at pg_config --bindir, /usr/lib/postgresql/*/bin and PATH); %s", ErrNotInstalled, installHint(""))
}

// versionOf returns N of /usr/lib/postgresql/N/bin as a number (major
// versions sort numerically: 9.6 < 10).
func versionOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"postgres", "initdb", "pg_ctl"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)(?:\.(\d+))?`)

// binaryMajor returns the major version of the server binaries, as found in
// PG_VERSION ("15", or "9.6" before version 10).
func binaryMajor(ctx context.Context, binDir string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("pgserver: %s/postgres --version: %w", binDir, err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("pgserver: cannot parse %q from %s/postgres --version", strings.TrimSpace(string(out)), binDir)
	}
	if n, _ := strconv.Atoi(m[1]); n < 10 {
		return m[1] + "." + m[2], nil
	}
	return m[1], nil
}

// osUser is the unprivileged account the server runs as when memstream
// runs as root.
type osUser struct {
	name     string
	uid, gid uint32
	groups   []uint32
	home     string
}

// serverOwner returns nil when the server can run as the current user, and
// otherwise (we are root, which PostgreSQL refuses) the "postgres" system
// user that Debian's package creates, or "nobody".
func serverOwner() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		o := &osUser{name: name, uid: uint32(uid), gid: uint32(gid), home: u.HomeDir}
		if ids, err := u.GroupIds(); err == nil {
			for _, id := range ids {
				if g, err := strconv.ParseUint(id, 10, 32); err == nil {
					o.groups = append(o.groups, uint32(g))
				}
			}
		}
		return o, nil
	}
	return nil, fmt.Errorf("pgserver: running as root, and PostgreSQL refuses root, but no unprivileged user to run it as: %w", errors.Join(errs...))
}

// run runs a PostgreSQL binary as the server owner and returns its combined
// output.
func (s *Server) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.cfg.BinDir, name), args...)
	// The owner may not be able to enter memstream's working directory, and
	// initdb fails when it cannot resolve it.
	cmd.Dir = "/"
	cmd.Env = serverEnv(s.owner)
	// Own process group: a Ctrl-C aimed at memstream must not reach the
	// server (SIGINT is its fast shutdown) before memstream has drained and
	// committed; memstream stops it last, through Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.owner != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: s.owner.uid, Gid: s.owner.gid, Groups: s.owner.groups}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	s.log.Debug("ran postgres command", slog.String("command", name), slog.Any("args", args), slog.Duration("duration", time.Since(start)), slog.Any("error", err))
	return strings.TrimSpace(out.String()), err
}

// serverEnv is the environment of server commands: PG* variables (PGDATA,
// PGPORT, ...) and the caller's locale must not leak into the cluster.
func serverEnv(owner *osUser) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "LANGUAGE" ||
			(owner != nil && (k == "HOME" || k == "USER" || k == "LOGNAME")) {
			continue
		}
		env = append(env, kv)
	}
	if owner != nil {
		env = append(env, "HOME="+owner.home, "USER="+owner.name, "LOGNAME="+owner.name)
	}
	return env
}

// chown hands path to the server owner, if the server runs as another user.
func (s *Server) chown(path string) error {
	if s.owner == nil {
		return nil
	}
	if err := os.Lchown(path, int(s.owner.uid), int(s.owner.gid)); err != nil {
		return fmt.Errorf("pgserver: chown %s to %s: %w", path, s.owner.name, err)
	}
	return nil
}

// prepareDir creates the data directory (0700, as PostgreSQL demands) and,
// when the server runs as another user, hands it over to that user and
// checks that the user can reach it.
func (s *Server) prepareDir() error {
	dir := s.cfg.DataDir
	// Parents we create are ours to make searchable; existing ones are not.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("pgserver: create data dir parent: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("pgserver: create data dir: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("pgserver: data dir %s is not a directory", dir)
	}
	if s.owner != nil {
		for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
			pfi, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("pgserver: %w", err)
			}
			if !s.owner.canSearch(pfi) {
				return fmt.Errorf("pgserver: data dir %s: the server runs as user %q (PostgreSQL refuses root), who cannot enter %s (mode %v); run `chmod o+x %s` or choose a data dir elsewhere (e.g. under /tmp or /var/lib)",
					dir, s.owner.name, p, pfi.Mode().Perm(), p)
			}
			if p == filepath.Dir(p) {
				break
			}
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && (st.Uid != s.owner.uid || st.Gid != s.owner.gid) {
			s.log.Info("handing data dir to server user", slog.String("user", s.owner.name))
			err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				return s.chown(path)
			})
			if err != nil {
				return fmt.Errorf("pgserver: chown data dir: %w", err)
			}
		}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("pgserver: chmod data dir: %w", err)
		}
	}
	return nil
}

// canSearch reports whether the user may enter the directory fi.
func (u *osUser) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	mode := uint32(fi.Mode().Perm())
	switch {
	case st.Uid == u.uid:
		return mode&0o100 != 0
	case st.Gid == u.gid || containsUint32(u.groups, st.Gid):
		return mode&0o010 != 0
	default:
		return mode&0o001 != 0
	}
}

func containsUint32(xs []uint32, x uint32) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// lockFile takes a flock (LOCK_EX or LOCK_SH) on path, waiting while
// another holder has a conflicting one. DIR.lock serialises Start and Stop
// across processes; it sits next to the data directory because initdb
// wants the directory itself empty.
func lockFile(ctx context.Context, path string, how int) (unlock func(), err error) {
	f, err := openLocked(ctx, path, how)
	if err != nil {
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}

// openLocked opens path and flocks it; closing the file drops the lock.
// The descriptor is close-on-exec, so the server processes memstream
// starts never inherit it.
func openLocked(ctx context.Context, path string, how int) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("pgserver: create data dir parent: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgserver: open lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("pgserver: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("pgserver: wait for lock %s: %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// othersUse reports whether any Server holds DIR.users (the caller must
// not hold it itself, and holds DIR.lock so that no Start joins meanwhile).
func othersUse(dir string) (bool, error) {
	path := dir + ".users"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return false, fmt.Errorf("pgserver: open lock %s: %w", path, err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("pgserver: lock %s: %w", path, err)
	}
	return false, nil
}

// placeDataDir decides where the cluster lives. As root the server runs as
// another user, who must be able to enter every parent of the data dir;
// one under a private directory (a clone in /root, any mktemp -d) is made
// in a new directory under Config.RelocateDir instead, with a symlink at
// the configured path so that later starts, and people, find it.
func (s *Server) placeDataDir(log *slog.Logger) error {
	if s.owner == nil {
		return nil
	}
	dir := s.cfg.DataDir
	fi, err := os.Lstat(dir)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if target, err := filepath.EvalSymlinks(dir); err == nil && s.owner.blockedParent(target) == "" {
			s.useDataDir(log, target)
			s.log.Info("postgres data dir is a symlink", slog.String("configured", dir))
			return nil
		}
		// Dangling, or pointing somewhere the user cannot reach: replaced.
	}
	blocked := s.owner.blockedParent(dir)
	if blocked == "" {
		return nil
	}
	if err == nil && fi.IsDir() {
		entries, rerr := os.ReadDir(dir)
		if rerr != nil {
			return fmt.Errorf("pgserver: %w", rerr)
		}
		if len(entries) > 0 {
			return fmt.Errorf("pgserver: data dir %s: the server runs as user %q (PostgreSQL refuses root), who cannot enter %s, and the directory is not empty; move it somewhere that user can enter and symlink it, or run `chmod o+x %s`",
				dir, s.owner.name, blocked, blocked)
		}
	}
	base, err := filepath.Abs(s.cfg.RelocateDir)
	if err != nil {
		return fmt.Errorf("pgserver: relocate dir %s: %w", s.cfg.RelocateDir, err)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return fmt.Errorf("pgserver: data dir %s: user %q cannot enter %s, and creating %s failed: %w", dir, s.owner.name, blocked, base, err)
	}
	if b := s.owner.blockedParent(filepath.Join(base, "x")); b != "" {
		return fmt.Errorf("pgserver: data dir %s: user %q cannot enter %s, nor %s (under which it would be relocated); run `chmod o+x %s`",
			dir, s.owner.name, blocked, b, b)
	}
	target, err := os.MkdirTemp(base, "postgres-")
	if err != nil {
		return fmt.Errorf("pgserver: relocate data dir: %w", err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pgserver: replace %s with a symlink: %w", dir, err)
	}
	if err := os.Symlink(target, dir); err != nil {
		return fmt.Errorf("pgserver: symlink %s to %s: %w", dir, target, err)
	}
	s.useDataDir(log, target)
	s.log.Warn("postgres data dir relocated: the server user cannot enter the configured one",
		slog.String("configured", dir), slog.String("user", s.owner.name), slog.String("blocked_at", blocked))
	return nil
}

func (s *Server) useDataDir(log *slog.Logger, dir string) {
	s.cfg.DataDir = dir
	s.log = log.With(slog.String("data_dir", dir), slog.Int("port", s.cfg.Port))
}

// blockedParent returns the first parent of path the user cannot enter,
// or "" when it can reach path.
func (u *osUser) blockedParent(path string) string {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		pfi, err := os.Stat(p)
		if err == nil && !u.canSearch(pfi) {
			return p
		}
		if p == filepath.Dir(p) {
			return ""
		}
	}
}
