package allotapi

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The rule of an idle exemption as operators grant it, shared by
// `allotctl idle exempt` (cli/idle) and the console's idle page
// (governor/console); governor/idle reads what they write.
const (
	// MaxExemption bounds how far ahead an exemption may expire.
	MaxExemption = 90 * 24 * time.Hour
	// ExemptKeyPrefix + job ID is the namespace meta key of an exemption.
	ExemptKeyPrefix = "allot.idle.exempt."
	// MaxExemptionReason bounds an exemption's reason, in characters
	// (runes), as the console bounds a requeue's reason.
	MaxExemptionReason = 500
)

// ExemptionExpiry reads an exemption's expiry: a duration from now (48h)
// or an RFC3339 time, in the future and at most MaxExemption ahead. It
// returns it in UTC, truncated to the second.
func ExemptionExpiry(s string, now time.Time) (time.Time, error) {
	var t time.Time
	if d, err := time.ParseDuration(s); err == nil {
		t = now.Add(d)
	} else if t, err = time.Parse(time.RFC3339, s); err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (48h) nor an RFC3339 time", s)
	}
	if !t.After(now) {
		return time.Time{}, errors.New("the expiry must be in the future")
	}
	if t.Sub(now) > MaxExemption {
		return time.Time{}, fmt.Errorf("the expiry must be within %s", MaxExemption)
	}
	return t.UTC().Truncate(time.Second), nil
}

// ExemptionReason cleans an exemption's reason: trimmed, and ';' (which
// separates the meta value's fields) written as ','. It refuses an empty
// reason and one over MaxExemptionReason characters.
func ExemptionReason(s string) (string, error) {
	r := strings.TrimSpace(strings.ReplaceAll(s, ";", ","))
	if r == "" {
		return "", errors.New("the reason must not be empty")
	}
	if n := utf8.RuneCountInString(r); n > MaxExemptionReason {
		return "", fmt.Errorf("the reason is %d characters, over %d", n, MaxExemptionReason)
	}
	return r, nil
}

// MetaValue is e as the namespace meta stores it:
// "until=<RFC3339>;reason=<text>" (governor/idle.ParseExemption reads it).
func (e IdleExemption) MetaValue() string {
	return "until=" + e.Until.UTC().Format(time.RFC3339) + ";reason=" + strings.ReplaceAll(e.Reason, ";", ",")
}
