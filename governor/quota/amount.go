package quota

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrBadAmount is wrapped by every error about an unparsable amount.
var ErrBadAmount = errors.New("bad amount")

// MaxAmount bounds every amount (2^53: about 8 ZiB of memory in MiB, or
// 9·10^15 MHz or devices). Amounts up to it are exact as float64, and the
// quotas of a whole cohort add up without overflowing an int64.
const MaxAmount int64 = 1 << 53

// memoryUnits maps a memory suffix to its size in MiB (as a fraction for
// the sub-MiB units, which must still come out whole).
var memoryUnits = []struct {
	suffix string
	mib    float64
}{
	{"TiB", 1024 * 1024}, {"GiB", 1024}, {"MiB", 1}, {"KiB", 1.0 / 1024},
	{"TB", 1e12 / (1 << 20)}, {"GB", 1e9 / (1 << 20)}, {"MB", 1e6 / (1 << 20)},
}

// cpuUnits maps a CPU suffix to MHz.
var cpuUnits = []struct {
	suffix string
	mhz    float64
}{{"GHz", 1000}, {"MHz", 1}}

// ParseAmount parses the amount of resource res: a non-negative integer,
// for memory optionally with a unit (64GiB, 512 MiB, 2TB; bare numbers are
// MiB) and for cpu optionally MHz or GHz.
func ParseAmount(res, s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%w: empty value", ErrBadAmount)
	}
	switch res {
	case Memory:
		for _, u := range memoryUnits {
			if num, ok := strings.CutSuffix(s, u.suffix); ok {
				return scaled(s, num, u.mib)
			}
		}
	case CPU:
		for _, u := range cpuUnits {
			if num, ok := strings.CutSuffix(s, u.suffix); ok {
				return scaled(s, num, u.mhz)
			}
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q is not a non-negative whole number%s", ErrBadAmount, s, unitHint(res))
	}
	if n > MaxAmount {
		return 0, tooLarge(s)
	}
	return n, nil
}

// scaled multiplies the number before a unit by the unit's size: in
// integers when both are whole (exact for any amount up to MaxAmount),
// else in floating point, where the result must still come out whole.
func scaled(orig, num string, factor float64) (int64, error) {
	num = strings.TrimSpace(num)
	if n, err := strconv.ParseInt(num, 10, 64); err == nil && n >= 0 && factor >= 1 && factor == math.Trunc(factor) {
		if n > MaxAmount/int64(factor) {
			return 0, tooLarge(orig)
		}
		return n * int64(factor), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f >= 0) {
		return 0, fmt.Errorf("%w: %q is not a non-negative number with a unit", ErrBadAmount, orig)
	}
	v := f * factor
	if v > float64(MaxAmount) {
		return 0, tooLarge(orig)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%w: %q is not a whole number of base units", ErrBadAmount, orig)
	}
	return int64(v), nil
}

func tooLarge(s string) error {
	return fmt.Errorf("%w: %q is above the largest amount, %d", ErrBadAmount, s, MaxAmount)
}

func unitHint(res string) string {
	switch res {
	case Memory:
		return " (MiB, or with a unit: 512MiB, 64GiB, 1TiB)"
	case CPU:
		return " (MHz, or with a unit: 2GHz)"
	}
	return " (a device count)"
}

// CheckResource refuses a resource name a quota key may not name, with the
// message `allotctl quota` and the console's quota form show.
func CheckResource(res string) error {
	if !ValidResource(res) {
		return fmt.Errorf("unknown resource %q: use cpu, memory, gpu, npu or a device vendor/type/model such as nvidia/gpu/H200", res)
	}
	return nil
}

// CheckAmount checks res and amount as Parse will read the meta key
// prefix+res (prefix: PrefixQuota, PrefixLimit or PrefixLend), and returns
// that key. It is the rule of every writer of quota amounts (allotctl
// quota set and quota files, the console's quota form).
func CheckAmount(prefix, res, amount string) (string, error) {
	if err := CheckResource(res); err != nil {
		return "", err
	}
	if _, err := ParseAmount(res, amount); err != nil {
		return "", fmt.Errorf("%s%s: %w", prefix, res, err)
	}
	return prefix + res, nil
}
