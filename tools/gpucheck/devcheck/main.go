// devcheck reports what a task sees of the GPUs: its user, the NVIDIA
// environment, every /dev/nvidia* node and whether it opens.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	fmt.Printf("uid=%d gid=%d\n", os.Getuid(), os.Getgid())
	for _, k := range []string{"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "ALLOT_CHECKPOINT_DIR"} {
		fmt.Printf("env %s=%q\n", k, os.Getenv(k))
	}
	nodes, _ := filepath.Glob("/dev/nvidia*")
	fmt.Printf("nodes %s\n", strings.Join(nodes, " "))
	for _, n := range nodes {
		var err error
		// cgroup v2: the driver installs the filter right after launch.
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			var f *os.File
			f, err = os.OpenFile(n, os.O_RDWR, 0)
			if err == nil {
				f.Close()
			}
			if err == nil || time.Now().After(deadline) {
				break
			}
		}
		var st syscall.Stat_t
		_ = syscall.Stat(n, &st)
		fmt.Printf("open %s rdev=%d:%d err=%v\n", n, st.Rdev>>8&0xfff, st.Rdev&0xff, err)
	}
	// host paths that must not be visible in a chroot
	for _, p := range []string{"/usr/local/nvidia", "/proc/driver/nvidia/gpus"} {
		_, err := os.Stat(p)
		fmt.Printf("stat %s err=%v\n", p, err)
	}
	if len(os.Args) > 1 {
		d, _ := time.ParseDuration(os.Args[1])
		time.Sleep(d)
	}
	fmt.Println("devcheck done")
}
