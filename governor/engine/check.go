package engine

import (
	"fmt"
	"strings"

	"github.com/allot-sh/allot/governor/quota"
)

// add records one resource's numbers; any amount over fails the check.
func (c *Check) add(a Amount) {
	c.Amounts = append(c.Amounts, a)
	if a.Over {
		c.OK = false
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
	s := fmt.Sprintf("needs %s; tenant %s uses %s of %s %s", amountOf(a.Resource, a.Need), c.Tenant,
		quota.Format(a.Resource, a.Used), kind, quota.Format(a.Resource, a.Cap))
	if a.Borrowable >= 0 && c.Name == "quota" {
		s += fmt.Sprintf(" and cohort %s can lend %s more", c.Cohort, quota.Format(a.Resource, a.Borrowable))
	}
	return s
}

func amountOf(r string, n int64) string {
	if quota.Unit(r) != "" {
		return quota.Format(r, n) + " " + r
	}
	return fmt.Sprintf("%d %s", n, r)
}
