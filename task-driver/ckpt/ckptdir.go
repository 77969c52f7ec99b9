package ckpt

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Modes of the checkpoint tree: <root>/<namespace> lets every task user
// through but lists nothing; the job directory and everything below it is
// the task user's alone.
const (
	namespaceDirMode = 0o711
	jobDirMode       = 0o700
)

var (
	// ErrNotADir is returned when a component of a checkpoint path is a
	// symlink or anything but a directory; the driver never follows one.
	ErrNotADir = errors.New("is a symlink or not a directory")
	// ErrForeignOwner is returned when an existing checkpoint directory
	// belongs to a user other than the task's (or the driver's, where the
	// driver may own it); the driver neither uses nor chowns it.
	ErrForeignOwner = errors.New("belongs to another user")
)

// dirOwner is the user a task runs as, who owns its checkpoint directory.
type dirOwner struct {
	name     string // for messages; empty is the plugin's own user
	uid, gid int
}

// ownerOf resolves a task's user; the empty name is the plugin's own user,
// whom the executor then runs the task as.
func ownerOf(username string) (dirOwner, error) {
	if username == "" {
		return dirOwner{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	uid, gid, err := lookupIDs(username)
	if err != nil {
		return dirOwner{}, err
	}
	return dirOwner{name: username, uid: uid, gid: gid}, nil
}

func (o dirOwner) String() string {
	if o.name == "" {
		return fmt.Sprintf("uid %d", o.uid)
	}
	return fmt.Sprintf("%s (uid %d)", o.name, o.uid)
}

// lookupIDs returns the uid and gid of a user name; a name that is no user
// but a number ("1000") or a pair ("1000:1000") is taken as uid[:gid], as
// the executors take it (the gid defaults to the uid).
func lookupIDs(username string) (int, int, error) {
	u, err := user.Lookup(username)
	if err != nil {
		if uid, gid, ok := numericIDs(username); ok {
			return uid, gid, nil
		}
		return 0, 0, fmt.Errorf("looking up task user %q: %w", username, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, 0, fmt.Errorf("uid of %q: %w", username, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return 0, 0, fmt.Errorf("gid of %q: %w", username, err)
	}
	return uid, gid, nil
}

// prepareDir creates the checkpoint directory of loc under root and
// returns its path. It walks down from root one component at a time with
// openat(O_NOFOLLOW|O_DIRECTORY), creates what is missing with mkdirat and
// changes owner and mode only through the opened directory's fd, so a
// symlink planted anywhere below root (by a tenant who owns part of the
// tree) is refused instead of followed. root itself is the operator's
// configured path and may be or contain a symlink.
//
//   - <root>/<namespace>: created by the driver, mode 0711; an existing one
//     must belong to the driver or to the task user (the shared-storage
//     layout of docs/task-driver.md) and is never chowned.
//   - <job>/<group>/<index>/<task>: owned by the task user, mode 0700. A
//     directory the driver just created, or one the driver owns (trees of
//     older versions), is given to the task user; one owned by anybody
//     else is refused with ErrForeignOwner.
func prepareDir(root string, loc Location, owner dirOwner) (string, error) {
	names, err := loc.components()
	if err != nil {
		return "", fmt.Errorf("checkpoint dir: %w", err)
	}
	root = filepath.Clean(root)
	if err := os.MkdirAll(root, 0o711); err != nil {
		return "", fmt.Errorf("creating checkpoint_root %s: %w", root, err)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("opening checkpoint_root %s: %w", root, err)
	}
	path := root
	for i, name := range names {
		path = filepath.Join(path, name)
		rule := levelRule{mode: jobDirMode, giveTo: &owner}
		if i == 0 {
			rule = levelRule{mode: namespaceDirMode, alsoOwner: owner.uid}
		}
		next, err := stepDir(fd, name, path, rule)
		unix.Close(fd)
		if err != nil {
			return "", err
		}
		fd = next
	}
	unix.Close(fd)
	return path, nil
}

// levelRule says who may own a directory of one level and what it becomes.
type levelRule struct {
	mode os.FileMode
	// giveTo, when set, owns the directory: a new one or one of the
	// driver's is chowned to it. When nil the driver keeps what it creates.
	giveTo *dirOwner
	// alsoOwner is a uid, besides the driver's, accepted as the owner of
	// an existing directory when giveTo is nil.
	alsoOwner int
}

// stepDir opens (creating when missing) the directory name beneath the
// directory parent without following a symlink, and settles its owner and
// mode on the opened fd. path is only for messages.
func stepDir(parent int, name, path string, rule levelRule) (int, error) {
	created := true
	if err := unix.Mkdirat(parent, name, uint32(rule.mode)); err != nil {
		if !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("creating checkpoint dir %s: %w", path, err)
		}
		created = false
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("checkpoint dir %s %w: refusing to follow it", path, ErrNotADir)
		}
		return -1, fmt.Errorf("opening checkpoint dir %s: %w", path, err)
	}
	if err := settle(fd, path, created, rule); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// settle checks the owner of the open directory fd and sets owner and mode.
func settle(fd int, path string, created bool, rule levelRule) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("inspecting checkpoint dir %s: %w", path, err)
	}
	self := os.Geteuid()
	uid := int(st.Uid)
	if rule.giveTo == nil {
		if !created && uid != self && uid != rule.alsoOwner {
			return fmt.Errorf("checkpoint dir %s %w (uid %d, not the driver's uid %d or the task user's uid %d): refusing to use it",
				path, ErrForeignOwner, uid, self, rule.alsoOwner)
		}
		if uid != self {
			return nil // the task user's (shared storage); it sets its own mode
		}
		return fixMode(fd, path, &st, rule.mode)
	}
	o := rule.giveTo
	if !created && uid != o.uid && uid != self {
		return fmt.Errorf("checkpoint dir %s %w (uid %d), not the task user %s: refusing to use or chown it",
			path, ErrForeignOwner, uid, o)
	}
	if uid != o.uid || int(st.Gid) != o.gid {
		if err := unix.Fchown(fd, o.uid, o.gid); err != nil {
			return fmt.Errorf("giving checkpoint dir %s to the task user %s: %w", path, o, err)
		}
	}
	return fixMode(fd, path, &st, rule.mode)
}

// fixMode sets the directory's permission bits to mode when they differ
// (setuid, setgid and sticky bits included).
func fixMode(fd int, path string, st *unix.Stat_t, mode os.FileMode) error {
	if st.Mode&0o7777 == uint32(mode) {
		return nil
	}
	if err := unix.Fchmod(fd, uint32(mode)); err != nil {
		return fmt.Errorf("restricting checkpoint dir %s to %#o: %w", path, mode, err)
	}
	return nil
}

// numericIDs parses "uid" or "uid:gid".
func numericIDs(name string) (int, int, bool) {
	uidS, gidS, hasGid := strings.Cut(name, ":")
	uid, err := strconv.Atoi(uidS)
	if err != nil || uid < 0 {
		return 0, 0, false
	}
	if !hasGid {
		return uid, uid, true
	}
	gid, err := strconv.Atoi(gidS)
	if err != nil || gid < 0 {
		return 0, 0, false
	}
	return uid, gid, true
}
