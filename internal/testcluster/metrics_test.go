package testcluster

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"
)

func TestMetricsReadsSeries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# HELP x y\n# TYPE allot_cycle_seconds histogram\nallot_cycle_seconds_sum 1.5\nallot_cycle_seconds_count 3\n"+
			"allot_preemptions_total{reason=\"queue order\"} 2\n\n")
	}))
	defer srv.Close()
	m, err := Metrics(srv.URL)
	must.NoError(t, err)
	must.Eq(t, map[string]float64{"allot_cycle_seconds_sum": 1.5, "allot_cycle_seconds_count": 3,
		`allot_preemptions_total{reason="queue order"}`: 2}, m)
}

func TestMetricsRefusesWhatItCannotRead(t *testing.T) {
	for name, body := range map[string]string{"not a number": "allot_x abc\n"} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) }))
			defer srv.Close()
			_, err := Metrics(srv.URL)
			must.Error(t, err)
		})
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := Metrics(srv.URL)
	must.ErrorContains(t, err, "404")
}
