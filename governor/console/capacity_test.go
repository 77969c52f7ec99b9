package console_test

import (
	"net/http"
	"testing"

	"github.com/shoenig/test/must"
)

func TestCapacityViewNamesTheShortPool(t *testing.T) {
	srv, _, _ := newReportGovernor(t)
	for _, token := range []string{"root", "ml"} {
		t.Run(token, func(t *testing.T) {
			b := newBrowser(t, srv)
			b.signIn(token)
			status, body, _ := b.get("/ui/capacity?window=24h")
			must.Eq(t, http.StatusOK, status)
			must.StrContains(t, body, `id="capacity-table"`)
			must.StrContains(t, body, "<td>gpu</td><td>nvidia/gpu/H200</td>")
			// 8 devices (1 down) for 3 h: 24 device-h, 3 down; 2.5
			// allocated; waiting 4 of 7 up = 57 %.
			must.StrContains(t, body, `<td class="num">24.000</td><td class="num">2.500</td>`)
			must.StrContains(t, body, `<td class="num">18.500</td><td class="num">3.000</td>`)
			must.StrContains(t, body, `id="shortest"`)
			must.StrContains(t, body, "Shortest pool: gpu nvidia/gpu/H200, where queued demand is 57% of the capacity that was up.")
			must.StrContains(t, body, `<polyline points="`)
		})
	}
	b := newBrowser(t, srv)
	b.signIn("root")
	status, body, _ := b.get("/ui/capacity?window=24h&lang=zh")
	must.Eq(t, http.StatusOK, status)
	must.StrContains(t, body, "最紧张的节点池：gpu nvidia/gpu/H200")
}
