package ckpt

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseStartTicks(t *testing.T) {
	rest := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21"
	cases := map[string]struct {
		stat    string
		want    uint64
		wantErr bool
	}{
		"plain":                  {stat: "42 (sleep)" + rest, want: 987654},
		"spaces and parens":      {stat: "42 (a) b (c) d)" + rest, want: 987654},
		"no command":             {stat: "42 sleep S 1 2", wantErr: true},
		"too short":              {stat: "42 (sleep) S 1 2 3", wantErr: true},
		"not a number":           {stat: "42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 abc 20", wantErr: true},
		"zero start":             {stat: "42 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 0 20", wantErr: true},
		"empty":                  {stat: "", wantErr: true},
		"newline after the line": {stat: "42 (sleep)" + rest + "\n", want: 987654},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseStartTicks(tc.stat)
			if tc.wantErr {
				must.Error(t, err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

// fakeProcRoot lays out a /proc with a boot id and one process.
func fakeProcRoot(t *testing.T, pid int, ticks uint64, boot string) string {
	t.Helper()
	root := t.TempDir()
	must.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "kernel", "random"), 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(root, "sys", "kernel", "random", "boot_id"), []byte(boot+"\n"), 0o644))
	if pid > 0 {
		stat := strconv.Itoa(pid) + " (train) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 " +
			strconv.FormatUint(ticks, 10) + " 20 21\n"
		must.NoError(t, os.MkdirAll(filepath.Join(root, strconv.Itoa(pid)), 0o755))
		must.NoError(t, os.WriteFile(filepath.Join(root, strconv.Itoa(pid), "stat"), []byte(stat), 0o644))
	}
	return root
}

func TestPidGuard(t *testing.T) {
	want := procIdentity{StartTicks: 500, BootID: "boot-a"}
	cases := map[string]struct {
		procRoot func(t *testing.T) string
		want     procIdentity
		ok       bool
	}{
		"same process":         {procRoot: func(t *testing.T) string { return fakeProcRoot(t, 77, 500, "boot-a") }, want: want, ok: true},
		"pid reused":           {procRoot: func(t *testing.T) string { return fakeProcRoot(t, 77, 900, "boot-a") }, want: want},
		"other boot":           {procRoot: func(t *testing.T) string { return fakeProcRoot(t, 77, 500, "boot-b") }, want: want},
		"no such process":      {procRoot: func(t *testing.T) string { return fakeProcRoot(t, 0, 0, "boot-a") }, want: want},
		"no identity recorded": {procRoot: func(t *testing.T) string { return fakeProcRoot(t, 77, 500, "boot-a") }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := pidGuard{procRoot: tc.procRoot(t), pid: 77, want: tc.want}
			err := g.check()
			if tc.ok {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrPidUnverified)
		})
	}
}

func TestReadProcIdentityOfThisProcess(t *testing.T) {
	id, err := readProcIdentity(defaultProcRoot, os.Getpid())
	must.NoError(t, err)
	must.True(t, id.known())
	again, err := readProcIdentity(defaultProcRoot, os.Getpid())
	must.NoError(t, err)
	must.Eq(t, id, again)
	g := pidGuard{procRoot: defaultProcRoot, pid: os.Getpid(), want: id}
	must.NoError(t, g.check())
	must.True(t, g.occupied())
	g.want.StartTicks++
	must.ErrorIs(t, g.check(), ErrPidUnverified)
}

// thisProcessGuard is a guard whose pid is the test process, verified.
func thisProcessGuard(t *testing.T) pidGuard {
	t.Helper()
	id, err := readProcIdentity(defaultProcRoot, os.Getpid())
	must.NoError(t, err)
	return pidGuard{procRoot: defaultProcRoot, pid: os.Getpid(), want: id}
}
