package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/allot-sh/allot/governor/quota"
)

// add records one resource's numbers; any amount over fails the check.
func (c *Check) add(a Amount) {
	if c.Amounts == nil {
		// One allocation for the handful of resources a check names.
		c.Amounts = make([]Amount, 0, 4)
	}
	c.Amounts = append(c.Amounts, a)
	if a.Over {
		c.OK = false
	}
	if a.Never {
		c.Permanent = true
	}
}

// withMetaErr notes the namespace's quota meta error on a failing check.
func (c Check) withMetaErr(err error) Check {
	if err != nil && !c.OK {
		c.MetaErr = err.Error()
	}
	return c
}

// Text renders the check for people, e.g. "needs 4 gpu; tenant ml uses 8
// of limit 8". A failing check shows only the resources that fail.
func (c *Check) Text() string {
	if len(c.Amounts) == 0 {
		if c.Detail == "" && (c.Name == "limit" || c.Name == "quota") {
			return "no " + c.Name + " applies"
		}
		return c.Detail
	}
	var parts []string
	for _, a := range c.Amounts {
		if c.OK || a.Over {
			parts = append(parts, c.amountText(a))
		}
	}
	s := strings.Join(parts, "; ")
	if c.MetaErr != "" {
		s += fmt.Sprintf(" (namespace quota meta is invalid: %s)", c.MetaErr)
	}
	return s
}

func (c *Check) amountText(a Amount) string {
	kind := "quota"
	if c.Name == "limit" {
		kind = "limit"
	}
	// Built without fmt: reasons are rendered for every job a cycle
	// decides about.
	var b strings.Builder
	b.Grow(96)
	b.WriteString("needs ")
	b.WriteString(amountOf(a.Resource, a.Need))
	b.WriteString("; tenant ")
	b.WriteString(c.Tenant)
	b.WriteString(" uses ")
	b.WriteString(quota.Format(a.Resource, a.Used))
	b.WriteString(" of ")
	b.WriteString(kind)
	b.WriteByte(' ')
	b.WriteString(quota.Format(a.Resource, a.Cap))
	if a.Borrowable >= 0 && c.Name == "quota" {
		b.WriteString(" and cohort ")
		b.WriteString(c.Cohort)
		b.WriteString(" can lend ")
		b.WriteString(quota.Format(a.Resource, a.Borrowable))
		b.WriteString(" more")
	}
	if a.Never {
		b.WriteString(", more than it could ever get (")
		b.WriteString(kind)
		if c.Name == "quota" {
			b.WriteString(" plus all the cohort could lend")
		}
		b.WriteString("): change the job or the ")
		b.WriteString(kind)
	}
	return b.String()
}

func amountOf(r string, n int64) string {
	if quota.Unit(r) != "" {
		return quota.Format(r, n) + " " + r
	}
	return strconv.FormatInt(n, 10) + " " + r
}
