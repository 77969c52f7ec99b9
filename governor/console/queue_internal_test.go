package console

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
)

// TestQueuePageHostilePage feeds ?page= values a caller can type to the
// queue page: the page shown is always a real page number, never more
// than PageSize rows, and the rows are exactly those of that page (none
// past the last page, whatever the number's size).
func TestQueuePageHostilePage(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Console{opts: Options{Now: func() time.Time { return now }, JobPool: func(string, string) string { return "gpu" }}}
	var qa allotapi.Queue
	for i := 0; i < 120; i++ { // three pages: 50, 50, 20
		qa.Jobs = append(qa.Jobs, allotapi.QueueEntry{Namespace: "team-a", JobID: fmt.Sprintf("j%03d", i), QueuedAt: now})
	}
	qa.Total = len(qa.Jobs)
	cases := map[string]struct {
		page      string
		wantPage  int
		wantFirst string // "" when the page has no rows
	}{
		"empty":             {"", 1, "j000"},
		"zero":              {"0", 1, "j000"},
		"negative":          {"-1", 1, "j000"},
		"min int":           {"-9223372036854775808", 1, "j000"},
		"not a number":      {"abc", 1, "j000"},
		"float":             {"2.5", 1, "j000"},
		"exponent":          {"1e3", 1, "j000"},
		"spaces":            {" 2", 1, "j000"},
		"plus":              {"+2", 2, "j050"},
		"second":            {"2", 2, "j050"},
		"last":              {"3", 3, "j100"},
		"past the last":     {"4", 4, ""},
		"past int":          {"99999999999999999999", 1, "j000"},
		"max int":           {"9223372036854775807", 9223372036854775807, ""},
		"offset wraps to 2": {"1106804644422573098", 1106804644422573098, ""},
		"offset wraps <0":   {"4611686018427387905", 4611686018427387905, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := c.queuePage(qa, queueFilter{}, atoi(tc.page))
			must.Eq(t, tc.wantPage, d.Page)
			must.Eq(t, 120, d.Matched)
			must.Eq(t, 3, d.Pages)
			must.LessEq(t, PageSize, len(d.Rows))
			if tc.wantFirst == "" {
				must.SliceEmpty(t, d.Rows)
				return
			}
			must.Eq(t, tc.wantFirst, d.Rows[0].JobID)
			must.StrContains(t, d.Self, "page="+strconv.Itoa(tc.wantPage))
		})
	}
}
