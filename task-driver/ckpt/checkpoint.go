package ckpt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	parts := []struct{ what, v string }{
		{"namespace", l.Namespace}, {"job", l.Job}, {"group", l.Group},
		{"alloc index", l.AllocIndex}, {"task", l.Task},
	}
	path := filepath.Clean(root)
	for _, p := range parts {
		c, err := escapeComponent(p.v)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.what, err)
		}
		path = filepath.Join(path, c)
	}
	rel, err := filepath.Rel(filepath.Clean(root), path)
	if err != nil || strings.HasPrefix(rel, "..") || rel == "." {
		return "", fmt.Errorf("%w: %q escapes %q", ErrBadName, path, root)
	}
	return path, nil
}

// escapeComponent makes one name safe as a single path component.
func escapeComponent(v string) (string, error) {
	if v == "" || v == "." || v == ".." || strings.ContainsRune(v, 0) {
		return "", fmt.Errorf("%w %q", ErrBadName, v)
	}
	r := strings.NewReplacer("%", "%25", "/", "%2F", "\\", "%5C")
	return r.Replace(v), nil
}

// prepareDir creates dir with owner-only permissions for the task's user
// (the plugin's own user when username is empty). Parents are created
// traversable but not listable (0711), so tenants cannot list each other's
// jobs.
func prepareDir(dir, username string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return fmt.Errorf("creating checkpoint parents of %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating checkpoint dir %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restricting checkpoint dir %s: %w", dir, err)
	}
	if username == "" {
		return nil
	}
	uid, gid, err := lookupIDs(username)
	if err != nil {
		return err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("giving checkpoint dir %s to user %s: %w", dir, username, err)
	}
	return nil
}

func lookupIDs(username string) (int, int, error) {
	u, err := user.Lookup(username)
	if err != nil {
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

// Latest is what a LATEST file says, with when it was written.
type Latest struct {
	// Path is the checkpoint path, made absolute against the checkpoint dir.
	Path string
	// Step is the training step, or -1 when LATEST names none.
	Step int64
	// ModTime is when LATEST was last replaced.
	ModTime time.Time
	// raw identifies this version of the file.
	raw string
}

// HasStep says whether LATEST named a step.
func (l Latest) HasStep() bool { return l.Step >= 0 }

// Same reports whether two reads saw the same version of LATEST.
func (l Latest) Same(o Latest) bool {
	return l.raw == o.raw && l.ModTime.Equal(o.ModTime)
}

// maxLatestSize bounds what is read of LATEST; a path and a step fit
// easily.
const maxLatestSize = 4096

// ReadLatest reads dir/LATEST. It returns fs.ErrNotExist (wrapped) when
// there is none yet, and an error for an empty or malformed file. LATEST is
// written by the task's user but read by the driver (usually root), so it
// must be a regular file and is opened without following symlinks: a link
// to /etc/shadow must not end up in task events.
func ReadLatest(dir string) (Latest, error) {
	p := filepath.Join(dir, LatestFile)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return Latest{}, fmt.Errorf("reading %s: %w: it is a symlink", p, ErrNotRegular)
		}
		return Latest{}, fmt.Errorf("reading %s: %w", p, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Latest{}, fmt.Errorf("reading %s: %w", p, err)
	}
	if !info.Mode().IsRegular() {
		return Latest{}, fmt.Errorf("reading %s: %w", p, ErrNotRegular)
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
	return l, nil
}

// ErrNotRegular is returned when LATEST is not a regular file.
var ErrNotRegular = errors.New("LATEST is not a regular file")

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
