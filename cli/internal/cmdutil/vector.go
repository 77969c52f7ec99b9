package cmdutil

import (
	"fmt"
	"strings"

	gq "github.com/allot-sh/allot/governor/quota"
)

// Compact renders a vector on one line: "gpu=8 memory=256GiB".
func Compact(v gq.Vector) string {
	var parts []string
	for _, k := range v.Keys() {
		parts = append(parts, k+"="+Amount(k, v[k]))
	}
	return Dash(strings.Join(parts, " "))
}

// Amount renders an amount of res with a compact unit ("256GiB").
func Amount(res string, n int64) string {
	switch {
	case res == gq.Memory && n != 0 && n%1024 == 0:
		return fmt.Sprintf("%dGiB", n/1024)
	case res == gq.Memory:
		return fmt.Sprintf("%dMiB", n)
	case res == gq.CPU:
		return fmt.Sprintf("%dMHz", n)
	}
	return fmt.Sprint(n)
}
