package pgserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// StartStandby makes cfg.DataDir a streaming replica of primary (a
// pg_basebackup of it, with standby.signal and primary_conninfo written by
// -R) unless it already holds one, and starts it on cfg.Port. The standby
// is a hot standby: it serves read-only queries, which is what
// database.read_url points recall at. Stop stops it.
func StartStandby(ctx context.Context, deps Deps, primary *Server, cfg Config) (*Server, error) {
	cfg.User, cfg.Database = primary.cfg.User, primary.cfg.Database
	cfg.BinDir = primary.cfg.BinDir
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := deps.logger()
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pgserver: standby data dir %s: %w", cfg.DataDir, err)
	}
	cfg.DataDir = dir
	s := &Server{cfg: cfg, lockBase: dir, owner: primary.owner, major: primary.major}
	s.log = log.With(slog.String("data_dir", dir), slog.Int("port", cfg.Port), slog.String("role", "standby"))
	unlock, err := lockFile(ctx, dir+".lock", syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s.users, err = openLocked(ctx, dir+".users", syscall.LOCK_SH); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.releaseUse()
		}
	}()
	if err := s.prepareDir(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		s.log.Info("base backup of the primary", slog.Int("primary_port", primary.cfg.Port))
		out, err := s.run(ctx, "pg_basebackup", "-D", dir, "-h", "127.0.0.1", "-p", strconv.Itoa(primary.cfg.Port),
			"-U", cfg.User, "-X", "stream", "-R", "--checkpoint=fast")
		if err != nil {
			return nil, fmt.Errorf("pgserver: pg_basebackup of port %d into %s: %w: %s", primary.cfg.Port, dir, err, out)
		}
	} else if err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	// The backup carries the primary's memstream.conf; the standby's own
	// port and socket replace it.
	if err := s.writeConf(); err != nil {
		return nil, err
	}
	if _, err := s.startOrReuse(ctx, false); err != nil {
		return nil, err
	}
	s.started = true
	conn, err := s.connect(ctx, cfg.Database)
	if err != nil {
		_ = s.pgCtlStop(context.WithoutCancel(ctx))
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var recovering bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil || !recovering {
		_ = s.pgCtlStop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("pgserver: server on port %d is not a standby (in recovery: %v, %v)", cfg.Port, recovering, err)
	}
	ok = true
	s.log.Info("standby ready", slog.String("url", s.URL()))
	return s, nil
}

// WaitReplayed waits until the standby has replayed everything the primary
// had written when it was called: after it, a read on the standby sees
// every transaction the primary had committed.
func WaitReplayed(ctx context.Context, primary, standby *Server, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, err := primary.connect(ctx, primary.cfg.Database)
	if err != nil {
		return err
	}
	defer p.Close(context.WithoutCancel(ctx))
	var lsn string
	if err := p.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return fmt.Errorf("pgserver: primary wal position: %w", err)
	}
	s, err := standby.connect(ctx, standby.cfg.Database)
	if err != nil {
		return err
	}
	defer s.Close(context.WithoutCancel(ctx))
	for {
		var done bool
		if err := s.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&done); err != nil {
			return fmt.Errorf("pgserver: standby replay position: %w", err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgserver: standby on port %d has not replayed up to %s: %w", standby.cfg.Port, lsn, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
