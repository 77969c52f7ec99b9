// Package pgtest starts a throwaway PostgreSQL server for tests: initdb in
// a temporary directory, the server on a free loopback port, run as an
// unprivileged user when the tests run as root (PostgreSQL refuses root),
// and everything removed again on Stop, also after a failed start.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// DefaultBin is where Debian's postgresql-15 installs the server.
const DefaultBin = "/usr/lib/postgresql/15/bin"

// ErrNoServer is returned when the PostgreSQL server binaries are absent.
var ErrNoServer = errors.New("PostgreSQL server binaries not found")

// Server is a running throwaway PostgreSQL.
type Server struct {
	// DSN connects to its "postgres" database as superuser "allot".
	DSN  string
	Port int
	dir  string
	cmd  *exec.Cmd
	seq  atomic.Int64
}

// Bin returns the directory of the server binaries: $ALLOT_PG_BIN or
// DefaultBin.
func Bin() string {
	if b := os.Getenv("ALLOT_PG_BIN"); b != "" {
		return b
	}
	return DefaultBin
}

// Start initialises and starts a server. It returns ErrNoServer (wrapped,
// naming the directory) when the binaries are not installed.
func Start() (*Server, error) {
	bin := Bin()
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		return nil, fmt.Errorf("%w in %s (install postgresql-15 or set ALLOT_PG_BIN)", ErrNoServer, bin)
	}
	dir, err := os.MkdirTemp("", "allot-pg-")
	if err != nil {
		return nil, fmt.Errorf("creating PostgreSQL directory: %w", err)
	}
	s := &Server{dir: dir}
	if err := s.start(bin); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(bin string) error {
	cred, err := credential(s.dir)
	if err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "allot", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	initdb.Dir = s.dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	if s.Port, err = freePort(); err != nil {
		return err
	}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(s.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir, "-c", "fsync=off",
		"-c", "max_connections=100")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	s.cmd.Dir = s.dir
	logf, err := os.Create(filepath.Join(s.dir, "postgres.log"))
	if err != nil {
		return fmt.Errorf("creating PostgreSQL log: %w", err)
	}
	defer logf.Close()
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	s.DSN = fmt.Sprintf("postgres://allot@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	return s.waitReady(30 * time.Second)
}

// credential makes dir usable by the user the server runs as: nobody when
// running as root, else the current user (nil credential).
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL refuses to run as root and there is no user nobody: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("giving %s to nobody: %w", dir, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the server until it answers or the deadline passes.
func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	db, err := sql.Open("pgx", s.DSN)
	if err != nil {
		return fmt.Errorf("opening %s: %w", s.DSN, err)
	}
	defer db.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
			return fmt.Errorf("PostgreSQL not ready after %s: %w\n%s", timeout, err, log)
		}
		t := time.NewTimer(100 * time.Millisecond)
		<-t.C
	}
}

// NewDB creates a fresh database, dropped when t ends, and returns its DSN.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.seq.Add(1))
	db, err := sql.Open("pgx", s.DSN)
	if err != nil {
		t.Fatalf("opening PostgreSQL: %v", err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", s.DSN)
		if err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			db.Close()
		}
	})
	return strings.Replace(s.DSN, "/postgres?", "/"+name+"?", 1)
}

// CreateDB creates a database that lives as long as the server (for
// fixtures shared by several tests or benchmark runs) and returns its DSN.
func (s *Server) CreateDB(name string) (string, error) {
	db, err := sql.Open("pgx", s.DSN)
	if err != nil {
		return "", fmt.Errorf("opening PostgreSQL: %w", err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	return strings.Replace(s.DSN, "/postgres?", "/"+name+"?", 1), nil
}

// Stop stops the server (fast shutdown, then kill) and removes its files.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
