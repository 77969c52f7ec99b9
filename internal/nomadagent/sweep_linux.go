package nomadagent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sweep removes every trace a set of agents rooted at dir can leave behind
// once they are stopped: processes that refer to dir (executors, tasks and
// plugins outlive a client agent by design), mounts under dir (Nomad mounts
// a tmpfs for each task's secrets), and the given cgroup parents. It returns
// the PIDs it had to kill.
func Sweep(dir string, cgroupParents ...string) ([]int, error) {
	killed := killReferring(dir)
	var errs []string
	if err := unmountUnder(dir); err != nil {
		errs = append(errs, err.Error())
	}
	for _, parent := range cgroupParents {
		removeCgroup(parent)
	}
	if len(errs) > 0 {
		return killed, fmt.Errorf("sweeping %s: %s", dir, strings.Join(errs, "; "))
	}
	return killed, nil
}

// killReferring SIGKILLs, repeatedly until none is left, every process whose
// executable, working directory, command line or environment names dir.
func killReferring(dir string) []int {
	var killed []int
	for round := 0; round < 10; round++ {
		pids := referringPIDs(dir)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
		for _, pid := range pids {
			waitGone(pid)
		}
	}
	return killed
}

func referringPIDs(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	needle := []byte(dir)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == 1 {
			continue
		}
		if refersTo(pid, dir, needle) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func refersTo(pid int, dir string, needle []byte) bool {
	base := "/proc/" + strconv.Itoa(pid)
	for _, link := range []string{"exe", "cwd"} {
		if target, err := os.Readlink(base + "/" + link); err == nil && within(target, dir) {
			return true
		}
	}
	for _, file := range []string{"cmdline", "environ"} {
		if data, err := os.ReadFile(base + "/" + file); err == nil && bytes.Contains(data, needle) {
			return true
		}
	}
	return false
}

func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// waitGone polls until a killed process has disappeared (or is a zombie
// whose parent will reap it).
func waitGone(pid int) {
	for i := 0; i < 200; i++ {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || bytes.Contains(data, []byte(") Z ")) {
			return
		}
		time.Sleep(10 * time.Millisecond) // bounded poll: at most 2s in all

	}
}

// unmountUnder detaches every mount point below dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && within(unescapeMount(fields[4]), dir) {
			points = append(points, unescapeMount(fields[4]))
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []string
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Sprintf("unmount %s: %v", p, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// unescapeMount decodes the octal escapes (\040 for space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroup removes the (by now empty) cgroup directories named parent
// under every cgroup v1 controller and the v2 hierarchy.
func removeCgroup(parent string) {
	if parent == "" || strings.Contains(parent, "..") {
		return
	}
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, root := range roots {
		top := filepath.Join(root, parent)
		var dirs []string
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}
