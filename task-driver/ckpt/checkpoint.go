package ckpt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Task environment variables set by the driver.
const (
	// EnvCheckpointDir is the task's checkpoint directory.
	EnvCheckpointDir = "ALLOT_CHECKPOINT_DIR"
	// EnvCheckpointSignal is the name of the checkpoint signal.
	EnvCheckpointSignal = "ALLOT_CHECKPOINT_SIGNAL"
	// EnvResumeFrom is the checkpoint path from LATEST, when LATEST exists.
	EnvResumeFrom = "ALLOT_RESUME_FROM"
	// EnvResumeStep is the step from LATEST, when LATEST names one.
	EnvResumeStep = "ALLOT_RESUME_STEP"
	// LatestFile is the file a task replaces atomically after each checkpoint.
	LatestFile = "LATEST"
)

// ErrBadName is returned when a name cannot become a directory component.
var ErrBadName = errors.New("invalid checkpoint directory component")

// Location names the task whose checkpoint directory is wanted.
type Location struct {
	Namespace, Job, Group, AllocIndex, Task string
}

// Dir returns <root>/<namespace>/<job>/<group>/<alloc-index>/<task>.
// Components are escaped so "/" cannot add levels, and "", "." and ".."
// are refused, so the result always lies strictly inside root.
func (l Location) Dir(root string) (string, error) {
	names, err := l.components()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{filepath.Clean(root)}, names...)...), nil
}

// components returns the escaped directory names below the root, from the
// namespace down to the task.
func (l Location) components() ([]string, error) {
	parts := []struct{ what, v string }{
		{"namespace", l.Namespace}, {"job", l.Job}, {"group", l.Group},
		{"alloc index", l.AllocIndex}, {"task", l.Task},
	}
	names := make([]string, 0, len(parts))
	for _, p := range parts {
		c, err := escapeComponent(p.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.what, err)
		}
		names = append(names, c)
	}
	return names, nil
}

// escapeComponent makes one name safe as a single path component.
func escapeComponent(v string) (string, error) {
	if v == "" || v == "." || v == ".." || strings.ContainsRune(v, 0) {
		return "", fmt.Errorf("%w %q", ErrBadName, v)
	}
	r := strings.NewReplacer("%", "%25", "/", "%2F", "\\", "%5C")
	return r.Replace(v), nil
}

// Latest is what a LATEST file says, with when it was written.
type Latest struct {
	// Path is the checkpoint path, made absolute against the checkpoint dir.
	Path string
	// Step is the training step, or -1 when LATEST names none.
	Step int64
	// ModTime is when LATEST was last replaced.
	ModTime time.Time
	// raw, ino and dev identify this version of the file: a LATEST
	// replaced by rename is a new inode even when it names the same step
	// within the file system's timestamp granularity (a few ms).
	raw      string
	ino, dev uint64
}

// HasStep says whether LATEST named a step.
func (l Latest) HasStep() bool { return l.Step >= 0 }

// Same reports whether two reads saw the same version of LATEST.
func (l Latest) Same(o Latest) bool {
	return l.raw == o.raw && l.ModTime.Equal(o.ModTime) && l.ino == o.ino && l.dev == o.dev
}

// maxLatestSize bounds what is read of LATEST; a path and a step fit
// easily.
const maxLatestSize = 4096

// ReadLatest reads dir/LATEST. It returns fs.ErrNotExist (wrapped) when
// there is none yet, and an error for an empty or malformed file. LATEST is
// written by the task's user but read by the driver (usually root), so it
// is opened without following a symlink, and refused unless it is a
// regular file with a single link owned by owner (the task user's uid): a
// symlink or hard link to /etc/shadow, or a file another tenant's task
// wrote, must not end up in task events or in ALLOT_RESUME_FROM.
func ReadLatest(dir string, owner int) (Latest, error) {
	p := filepath.Join(dir, LatestFile)
	f, err := openLatest(dir)
	if err != nil {
		return Latest{}, fmt.Errorf("reading %s: %w", p, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Latest{}, fmt.Errorf("reading %s: %w", p, err)
	}
	if err := trustLatest(info, owner); err != nil {
		return Latest{}, fmt.Errorf("reading %s: %w", p, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxLatestSize+1))
	if err != nil {
		return Latest{}, fmt.Errorf("reading %s: %w", p, err)
	}
	if len(data) > maxLatestSize {
		return Latest{}, fmt.Errorf("reading %s: larger than %d bytes", p, maxLatestSize)
	}
	l, err := parseLatest(dir, string(data))
	if err != nil {
		return Latest{}, fmt.Errorf("parsing %s: %w", p, err)
	}
	l.ModTime = info.ModTime()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		l.ino, l.dev = uint64(st.Ino), uint64(st.Dev) // widths differ by platform
	}
	return l, nil
}

// openLatest opens dir/LATEST without following a symlink, either for dir
// (the task's own directory) or for LATEST, and without blocking on a FIFO.
func openLatest(dir string) (*os.File, error) {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("checkpoint dir %w", ErrNotADir)
		}
		return nil, err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, LatestFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%w: it is a symlink", ErrNotRegular)
		}
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, LatestFile)), nil
}

// trustLatest refuses a LATEST that is not a regular file, has other
// links, or belongs to anybody but owner.
func trustLatest(info fs.FileInfo, owner int) error {
	if !info.Mode().IsRegular() {
		return ErrNotRegular
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: no owner information", ErrUntrustedLatest)
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%w: it has %d hard links", ErrUntrustedLatest, st.Nlink)
	}
	if int(st.Uid) != owner {
		return fmt.Errorf("%w: it belongs to uid %d, not the task user's uid %d", ErrUntrustedLatest, st.Uid, owner)
	}
	return nil
}

// ErrNotRegular is returned when LATEST is not a regular file.
var ErrNotRegular = errors.New("LATEST is not a regular file")

// ErrUntrustedLatest is returned when LATEST is hard-linked or is not the
// task user's.
var ErrUntrustedLatest = errors.New("LATEST is not the task's own file")

// parseLatest parses LATEST: first line the checkpoint path, optional
// second line the step.
func parseLatest(dir, data string) (Latest, error) {
	sc := bufio.NewScanner(strings.NewReader(data))
	var lines []string
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return Latest{}, errors.New("LATEST is empty")
	}
	l := Latest{Path: lines[0], Step: -1, raw: data}
	if !filepath.IsAbs(l.Path) {
		l.Path = filepath.Join(dir, l.Path)
	}
	if len(lines) > 1 {
		step, err := strconv.ParseInt(lines[1], 10, 64)
		if err != nil || step < 0 {
			return Latest{}, fmt.Errorf("step %q is not a non-negative integer", lines[1])
		}
		l.Step = step
	}
	return l, nil
}

// taskEnv returns the variables the driver adds to the task's environment.
func taskEnv(dir, signalName string, latest *Latest) map[string]string {
	env := map[string]string{
		EnvCheckpointDir:    dir,
		EnvCheckpointSignal: signalName,
	}
	if latest != nil {
		env[EnvResumeFrom] = latest.Path
		if latest.HasStep() {
			env[EnvResumeStep] = strconv.FormatInt(latest.Step, 10)
		}
	}
	return env
}
