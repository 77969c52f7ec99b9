package jobmeta

import (
	"fmt"
	"strconv"
)

// MaxShown is how many characters (runes) of a user-set job meta value
// the governor repeats in what it says: verdicts, decisions, the log,
// the API, the console. Job meta is the submitter's and Nomad bounds no
// value, so a 64 KiB allot.max-runtime would otherwise travel whole into
// every one of them. A byte that is not UTF-8 counts as one character.
const MaxShown = 64

// Shown is v cut to its first MaxShown characters, with "…" appended
// when it was cut.
func Shown(v string) string {
	s, _ := shown(v)
	return s
}

func shown(v string) (string, bool) {
	n := 0
	for i := range v {
		if n == MaxShown {
			return v[:i] + "…", true
		}
		n++
	}
	return v, false
}

// Quote quotes user-set meta value v for a message as %q does, cut as
// Shown cuts it; a cut value also says its whole length in bytes
// (`"abc…" (65536 bytes)`). What it returns is at most MaxQuoted bytes
// long, whatever v is.
func Quote(v string) string {
	s, cut := shown(v)
	if !cut {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q (%d bytes)", s, len(v))
}

// MaxQuoted bounds the length of Quote's result, in bytes: MaxShown
// characters quoted at most 10 bytes each (`\U0010ffff`), the quotes,
// "…" and the byte count.
const MaxQuoted = MaxShown*10 + 2 + len("…") + len(" (9223372036854775807 bytes)")
