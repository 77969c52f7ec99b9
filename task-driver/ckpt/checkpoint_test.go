package ckpt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func loc() Location {
	return Location{Namespace: "ml", Job: "train", Group: "g", AllocIndex: "0", Task: "t"}
}

func TestLocationDir(t *testing.T) {
	cases := map[string]struct {
		edit    func(*Location)
		want    string
		wantErr bool
	}{
		"plain":                     {edit: func(*Location) {}, want: "/ck/ml/train/g/0/t"},
		"dispatched job id escaped": {edit: func(l *Location) { l.Job = "train/dispatch-1" }, want: "/ck/ml/train%2Fdispatch-1/g/0/t"},
		"dot dot job":               {edit: func(l *Location) { l.Job = ".." }, wantErr: true},
		"dot task":                  {edit: func(l *Location) { l.Task = "." }, wantErr: true},
		"traversal in group":        {edit: func(l *Location) { l.Group = "../../etc" }, want: "/ck/ml/train/..%2F..%2Fetc/0/t"},
		"absolute namespace":        {edit: func(l *Location) { l.Namespace = "/etc" }, want: "/ck/%2Fetc/train/g/0/t"},
		"empty namespace":           {edit: func(l *Location) { l.Namespace = "" }, wantErr: true},
		"nul byte":                  {edit: func(l *Location) { l.Task = "a\x00b" }, wantErr: true},
		"backslash":                 {edit: func(l *Location) { l.Task = `a\..` }, want: "/ck/ml/train/g/0/a%5C.."},
		"percent stays unambiguous": {edit: func(l *Location) { l.Job = "a%2Fb" }, want: "/ck/ml/a%252Fb/g/0/t"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := loc()
			tc.edit(&l)
			got, err := l.Dir("/ck")
			if tc.wantErr {
				must.ErrorIs(t, err, ErrBadName)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
			rel, err := filepath.Rel("/ck", got)
			must.NoError(t, err)
			must.False(t, strings.HasPrefix(rel, ".."))
			must.Eq(t, 5, len(strings.Split(rel, "/")))
		})
	}
}

func TestParseLatest(t *testing.T) {
	cases := map[string]struct {
		data     string
		wantPath string
		wantStep int64
		wantErr  bool
	}{
		"path and step":         {data: "/ck/step-5\n5\n", wantPath: "/ck/step-5", wantStep: 5},
		"path only":             {data: "/ck/step-5\n", wantPath: "/ck/step-5", wantStep: -1},
		"relative path":         {data: "step-9\n9", wantPath: "/dir/step-9", wantStep: 9},
		"blank lines and space": {data: "\n  /ck/x  \n\n 3 \n", wantPath: "/ck/x", wantStep: 3},
		"empty":                 {data: "\n\n", wantErr: true},
		"bad step":              {data: "/ck/x\nfive\n", wantErr: true},
		"negative step":         {data: "/ck/x\n-1\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := parseLatest("/dir", tc.data)
			if tc.wantErr {
				must.Error(t, err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.wantPath, l.Path)
			must.Eq(t, tc.wantStep, l.Step)
		})
	}
}

func TestReadLatestMissing(t *testing.T) {
	_, err := ReadLatest(t.TempDir(), os.Geteuid())
	must.True(t, errors.Is(err, fs.ErrNotExist))
}

func TestTaskEnv(t *testing.T) {
	env := taskEnv("/ck/d", "SIGUSR1", nil)
	must.MapEq(t, map[string]string{EnvCheckpointDir: "/ck/d", EnvCheckpointSignal: "SIGUSR1"}, env)
	env = taskEnv("/ck/d", "SIGUSR2", &Latest{Path: "/ck/d/s-4", Step: 4})
	must.Eq(t, "/ck/d/s-4", env[EnvResumeFrom])
	must.Eq(t, "4", env[EnvResumeStep])
}

func TestLatestWatcherRateLimits(t *testing.T) {
	start := time.Unix(1000, 0)
	w := latestWatcher{interval: 30 * time.Second, prevTime: start}
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	v := func(step int64, s int) Latest {
		return Latest{Path: "/p", Step: step, ModTime: at(s), raw: string(rune('a' + step))}
	}
	type obs struct {
		l        Latest
		ok       bool
		now      int
		wantStep int64 // -2: no event
	}
	steps := []obs{
		{ok: false, now: 1, wantStep: -2},
		{l: v(1, 10), ok: true, now: 10, wantStep: 1},
		{l: v(1, 10), ok: true, now: 11, wantStep: -2},
		{l: v(2, 15), ok: true, now: 15, wantStep: -2},
		{l: v(3, 20), ok: true, now: 20, wantStep: -2},
		{l: v(3, 20), ok: true, now: 40, wantStep: 3},
		{l: v(3, 20), ok: true, now: 80, wantStep: -2},
		{l: v(4, 90), ok: true, now: 90, wantStep: 4},
	}
	for i, o := range steps {
		ev, emitted := w.observe(o.l, o.ok, at(o.now))
		if o.wantStep == -2 {
			must.False(t, emitted, must.Sprintf("observation %d emitted %q", i, ev.msg))
			continue
		}
		must.True(t, emitted, must.Sprintf("observation %d", i))
		must.Eq(t, triggerPeriodic, ev.ann[AnnTrigger])
		must.StrContains(t, ev.msg, "step "+string(rune('0'+o.wantStep)))
	}
}

func TestReadLatestRefusesWhatIsNotARegularFile(t *testing.T) {
	cases := map[string]func(t *testing.T, dir string){
		"symlink to a secret": func(t *testing.T, dir string) {
			secret := filepath.Join(t.TempDir(), "secret")
			must.NoError(t, os.WriteFile(secret, []byte("root:hash\n"), 0o600))
			must.NoError(t, os.Symlink(secret, filepath.Join(dir, LatestFile)))
		},
		"directory": func(t *testing.T, dir string) {
			must.NoError(t, os.Mkdir(filepath.Join(dir, LatestFile), 0o700))
		},
		"fifo": func(t *testing.T, dir string) {
			must.NoError(t, syscall.Mkfifo(filepath.Join(dir, LatestFile), 0o600))
		},
		"huge": func(t *testing.T, dir string) {
			must.NoError(t, os.WriteFile(filepath.Join(dir, LatestFile), []byte(strings.Repeat("x", 5000)), 0o600))
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			setup(t, dir)
			l, err := ReadLatest(dir, os.Geteuid())
			must.Error(t, err)
			must.StrNotContains(t, l.Path, "root")
		})
	}
}

func TestReadLatestRegular(t *testing.T) {
	dir := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(dir, LatestFile), []byte("ck-3\n3\n"), 0o600))
	l, err := ReadLatest(dir, os.Geteuid())
	must.NoError(t, err)
	must.Eq(t, filepath.Join(dir, "ck-3"), l.Path)
	must.Eq(t, int64(3), l.Step)
	must.False(t, l.ModTime.IsZero())
}

// TestReadLatestSameVersion: a LATEST replaced by rename is a new version
// even with the same content and timestamp (a save of the same step within
// the file system's timestamp granularity); rereading one file is not.
func TestReadLatestSameVersion(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, LatestFile)
	stamp := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	write := func(t *testing.T) Latest {
		tmp := filepath.Join(dir, ".tmp-latest")
		must.NoError(t, os.WriteFile(tmp, []byte("ck-3\n3\n"), 0o600))
		must.NoError(t, os.Chtimes(tmp, stamp, stamp))
		must.NoError(t, os.Rename(tmp, p))
		l, err := ReadLatest(dir, os.Geteuid())
		must.NoError(t, err)
		return l
	}
	first := write(t)
	again, err := ReadLatest(dir, os.Geteuid())
	must.NoError(t, err)
	must.True(t, first.Same(again), must.Sprint("rereading one file"))
	replaced := write(t)
	must.Eq(t, first.ModTime, replaced.ModTime)
	must.False(t, first.Same(replaced), must.Sprint("LATEST replaced by rename with the same content and time"))
}
