package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
)

// maxProfileSeconds bounds the seconds a profile or trace may run for.
// Go's profiler takes any other value (unparsable, negative) as its
// default and runs a large one for as long as asked.
const maxProfileSeconds = 60

// profileSeconds refuses a profiler request whose seconds parameter is
// not a number of seconds in (0, maxProfileSeconds]; without one, h runs
// with its default.
func profileSeconds(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if _, given := q["seconds"]; given {
			sec, err := strconv.ParseFloat(q.Get("seconds"), 64)
			if err != nil || math.IsNaN(sec) || sec <= 0 || sec > maxProfileSeconds {
				writeErr(w, http.StatusBadRequest, fmt.Sprintf("seconds=%q: want a number of seconds above 0 and at most %d", q.Get("seconds"), maxProfileSeconds))
				return
			}
		}
		h(w, r)
	}
}
