package allotapi

import (
	"encoding/json"
	"net/http"
)

// WriteJSON answers v as JSON with status. It encodes before it writes the
// status line, so a value JSON cannot encode (a time outside years
// 0–9999, say) answers 500 with an Error saying so, never status with a
// truncated body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(Error{Error: "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
