package ckpt

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"
)

// TestAudit29_LatestRefused: LATEST is trusted only as a regular file with
// one link, owned by the task user, reached without a symlink (audit #29).
func TestAudit29_LatestRefused(t *testing.T) {
	needRoot(t)
	owner := nobody(t)
	writeOwned := func(t *testing.T, p string, uid int) {
		must.NoError(t, os.WriteFile(p, []byte("/ck/secret-weights\n7\n"), 0o600))
		must.NoError(t, os.Chown(p, uid, uid))
	}
	cases := map[string]struct {
		setup   func(t *testing.T, dir string)
		wantErr error // nil: accepted
	}{
		"the task user's own file": {
			setup: func(t *testing.T, dir string) { writeOwned(t, filepath.Join(dir, LatestFile), owner.uid) },
		},
		"hard link to another tenant's LATEST": {
			setup: func(t *testing.T, dir string) {
				other := filepath.Join(t.TempDir(), "LATEST")
				writeOwned(t, other, owner.uid)
				must.NoError(t, os.Link(other, filepath.Join(dir, LatestFile)))
			},
			wantErr: ErrUntrustedLatest,
		},
		"owned by another uid": {
			setup:   func(t *testing.T, dir string) { writeOwned(t, filepath.Join(dir, LatestFile), otherUID) },
			wantErr: ErrUntrustedLatest,
		},
		"owned by root": {
			setup:   func(t *testing.T, dir string) { writeOwned(t, filepath.Join(dir, LatestFile), 0) },
			wantErr: ErrUntrustedLatest,
		},
		"fifo": {
			setup: func(t *testing.T, dir string) {
				p := filepath.Join(dir, LatestFile)
				must.NoError(t, syscall.Mkfifo(p, 0o600))
				must.NoError(t, os.Chown(p, owner.uid, owner.gid))
			},
			wantErr: ErrNotRegular,
		},
		"symlink to the task user's file": {
			setup: func(t *testing.T, dir string) {
				target := filepath.Join(t.TempDir(), "x")
				writeOwned(t, target, owner.uid)
				must.NoError(t, os.Symlink(target, filepath.Join(dir, LatestFile)))
			},
			wantErr: ErrNotRegular,
		},
		"directory": {
			setup: func(t *testing.T, dir string) {
				p := filepath.Join(dir, LatestFile)
				must.NoError(t, os.Mkdir(p, 0o700))
				must.NoError(t, os.Chown(p, owner.uid, owner.gid))
			},
			wantErr: ErrNotRegular,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			l, err := ReadLatest(dir, owner.uid)
			if tc.wantErr == nil {
				must.NoError(t, err)
				must.Eq(t, "/ck/secret-weights", l.Path)
				must.Eq(t, int64(7), l.Step)
				return
			}
			must.ErrorIs(t, err, tc.wantErr)
			must.Eq(t, "", l.Path)
		})
	}
}

// TestAudit29_CheckpointDirSymlinkRefused: the checkpoint dir itself
// replaced by a symlink is not read through.
func TestAudit29_CheckpointDirSymlinkRefused(t *testing.T) {
	real := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(real, LatestFile), []byte("/x\n"), 0o600))
	link := filepath.Join(t.TempDir(), "t")
	must.NoError(t, os.Symlink(real, link))
	_, err := ReadLatest(link, os.Geteuid())
	must.ErrorIs(t, err, ErrNotADir)
	_, err = ReadLatest(real, os.Geteuid())
	must.NoError(t, err)
}
