package ckpt

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"
)

// ownerUID is the uid that owns path, or -1.
func ownerUID(path string) int {
	info, err := os.Lstat(path)
	if err != nil {
		return -1
	}
	return int(info.Sys().(*syscall.Stat_t).Uid)
}

// needRoot skips a test that must create files owned by other users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chown to other users needs root; this test runs as uid", os.Geteuid())
	}
}

// nobody is the task user of the tests that run as root.
func nobody(t *testing.T) dirOwner {
	t.Helper()
	o, err := ownerOf("nobody")
	must.NoError(t, err)
	return o
}

// otherUID is a uid that is neither the driver's nor nobody's.
const otherUID = 4242

type fileState struct {
	uid, gid int
	mode     fs.FileMode
	entries  int
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	info, err := os.Lstat(path)
	must.NoError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	fsState := fileState{uid: int(st.Uid), gid: int(st.Gid), mode: info.Mode()}
	if info.IsDir() {
		ents, err := os.ReadDir(path)
		must.NoError(t, err)
		fsState.entries = len(ents)
	}
	return fsState
}

func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	info, err := os.Lstat(path)
	must.NoError(t, err)
	return info.Mode().Perm()
}

func TestPrepareDirModesAndOwners(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	owner := nobody(t)
	dir, err := prepareDir(root, loc(), owner)
	must.NoError(t, err)
	must.Eq(t, filepath.Join(root, "ml", "train", "g", "0", "t"), dir)

	ns := filepath.Join(root, "ml")
	must.Eq(t, 0, ownerUID(ns))
	must.Eq(t, fs.FileMode(0o711), modeOf(t, ns))
	for _, rel := range []string{"train", "train/g", "train/g/0", "train/g/0/t"} {
		p := filepath.Join(ns, rel)
		must.Eq(t, owner.uid, ownerUID(p), must.Sprint(p))
		must.Eq(t, fs.FileMode(0o700), modeOf(t, p), must.Sprint(p))
	}
	again, err := prepareDir(root, loc(), owner)
	must.NoError(t, err, must.Sprint("preparing an existing tree again"))
	must.Eq(t, dir, again)
	_, err = ownerOf("no-such-user-allot")
	must.Error(t, err)
}

func TestPrepareDirAsPluginUser(t *testing.T) {
	root := t.TempDir()
	self, err := ownerOf("")
	must.NoError(t, err)
	dir, err := prepareDir(root, loc(), self)
	must.NoError(t, err)
	must.Eq(t, fs.FileMode(0o700), modeOf(t, dir))
	must.Eq(t, fs.FileMode(0o711), modeOf(t, filepath.Join(root, "ml")))
	must.Eq(t, os.Geteuid(), ownerUID(dir))
}

// TestAudit14_SymlinkNeverFollowed plants a symlink (audit #14) as the
// leaf, as a parent component and at the namespace level, pointing at a
// root-owned directory outside the checkpoint root. The driver must
// refuse, and create, chown and chmod nothing outside the root.
func TestAudit14_SymlinkNeverFollowed(t *testing.T) {
	needRoot(t)
	cases := map[string]string{
		"leaf (task)":         "ml/train/g/0/t",
		"parent (group)":      "ml/train/g",
		"job":                 "ml/train",
		"namespace":           "ml",
		"parent (alloc idx)":  "ml/train/g/0",
		"leaf to a file":      "ml/train/g/0/t",
		"namespace to a file": "ml",
	}
	for name, link := range cases {
		t.Run(name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			must.NoError(t, os.Chmod(outside, 0o755))
			target := outside
			if strings.HasSuffix(name, "to a file") {
				target = filepath.Join(outside, "passwd")
				must.NoError(t, os.WriteFile(target, []byte("root:x:0:0\n"), 0o644))
			}
			before := stateOf(t, target)
			linkPath := filepath.Join(root, link)
			must.NoError(t, os.MkdirAll(filepath.Dir(linkPath), 0o711))
			must.NoError(t, os.Symlink(target, linkPath))

			_, err := prepareDir(root, loc(), nobody(t))
			must.ErrorIs(t, err, ErrNotADir)
			must.ErrorContains(t, err, linkPath)
			must.Eq(t, before, stateOf(t, target), must.Sprint("the symlink's target changed"))
			fi, err := os.Lstat(linkPath)
			must.NoError(t, err)
			must.Eq(t, fs.ModeSymlink, fi.Mode().Type(), must.Sprint("the symlink itself was replaced"))
		})
	}
}

// TestAudit14_ForeignOwnerRefused: an existing directory of the tree that
// belongs to another user is neither used nor chowned (audit #14).
func TestAudit14_ForeignOwnerRefused(t *testing.T) {
	needRoot(t)
	cases := map[string]string{
		"namespace": "ml",
		"job":       "ml/train",
		"group":     "ml/train/g",
		"task":      "ml/train/g/0/t",
	}
	for name, foreign := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			p := filepath.Join(root, foreign)
			must.NoError(t, os.MkdirAll(p, 0o755))
			must.NoError(t, os.Chown(p, otherUID, otherUID))
			before := stateOf(t, p)
			_, err := prepareDir(root, loc(), nobody(t))
			must.ErrorIs(t, err, ErrForeignOwner)
			must.ErrorContains(t, err, p)
			must.Eq(t, before, stateOf(t, p))
		})
	}
}

// TestPrepareDirAcceptsTaskUsersNamespace covers the shared-storage layout
// of docs/task-driver.md: <root>/<namespace> is the mount point of a
// per-namespace export owned by the task user; it is used as it is.
func TestPrepareDirAcceptsTaskUsersNamespace(t *testing.T) {
	needRoot(t)
	root, owner := t.TempDir(), nobody(t)
	ns := filepath.Join(root, "ml")
	must.NoError(t, os.Mkdir(ns, 0o750))
	must.NoError(t, os.Chown(ns, owner.uid, owner.gid))
	before := stateOf(t, ns)
	dir, err := prepareDir(root, loc(), owner)
	must.NoError(t, err)
	must.Eq(t, owner.uid, ownerUID(dir))
	after := stateOf(t, ns)
	must.Eq(t, before.uid, after.uid)
	must.Eq(t, before.mode, after.mode)
}

// TestPrepareDirTakesOverDriverOwnedTree: trees of older versions have
// root-owned 0711 parents; they become the task user's, and a mode the
// task user loosened is tightened again.
func TestPrepareDirTakesOverDriverOwnedTree(t *testing.T) {
	needRoot(t)
	root, owner := t.TempDir(), nobody(t)
	leaf := filepath.Join(root, "ml", "train", "g", "0", "t")
	must.NoError(t, os.MkdirAll(leaf, 0o711))
	must.NoError(t, os.Chmod(leaf, 0o777|fs.ModeSetgid))
	must.NoError(t, os.Chmod(filepath.Join(root, "ml"), 0o755))
	dir, err := prepareDir(root, loc(), owner)
	must.NoError(t, err)
	must.Eq(t, leaf, dir)
	for _, p := range []string{"ml/train", "ml/train/g", "ml/train/g/0", "ml/train/g/0/t"} {
		must.Eq(t, owner.uid, ownerUID(filepath.Join(root, p)), must.Sprint(p))
		info, err := os.Lstat(filepath.Join(root, p))
		must.NoError(t, err)
		must.Eq(t, fs.ModeDir|0o700, info.Mode(), must.Sprint(p))
	}
	must.Eq(t, fs.FileMode(0o711), modeOf(t, filepath.Join(root, "ml")))
	must.Eq(t, 0, ownerUID(filepath.Join(root, "ml")))
}
