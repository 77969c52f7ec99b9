package allotapi

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"
)

func TestWriteJSON(t *testing.T) {
	cases := map[string]struct {
		v        any
		status   int
		wantCode int
		wantErr  string
	}{
		"value":          {v: Error{Error: "x"}, status: http.StatusTeapot, wantCode: http.StatusTeapot, wantErr: "x"},
		"unencodable":    {v: math.Inf(1), status: http.StatusOK, wantCode: http.StatusInternalServerError, wantErr: "encoding the answer"},
		"unencodable ch": {v: make(chan int), status: http.StatusOK, wantCode: http.StatusInternalServerError, wantErr: "encoding the answer"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteJSON(rec, tc.status, tc.v)
			must.Eq(t, tc.wantCode, rec.Code)
			must.Eq(t, "application/json", rec.Header().Get("Content-Type"))
			var out Error
			must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			must.StrContains(t, out.Error, tc.wantErr)
		})
	}
}
