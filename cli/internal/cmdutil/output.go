package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
)

// ExitUsage is the exit code of a command called wrongly.
const ExitUsage = 2

// UsageError returns an error that exits with ExitUsage and names the
// command's usage line.
func UsageError(c *cli.Context, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return cli.Exit(fmt.Sprintf("%s\nUsage: %s %s", msg, c.Command.HelpName, c.Command.ArgsUsage), ExitUsage)
}

// JSON writes v indented.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	return nil
}

// Table writes rows under a header, columns aligned, as nomad's CLI does.
// An empty row list prints the header only when header is non-nil.
func Table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if header != nil {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// KV is one line of a key/value list.
type KV struct{ Key, Value string }

// KVList writes "Key = Value" lines with the = aligned, as nomad's
// status commands do.
func KVList(w io.Writer, kvs []KV) error {
	width := 0
	for _, kv := range kvs {
		if len(kv.Key) > width {
			width = len(kv.Key)
		}
	}
	for _, kv := range kvs {
		if _, err := fmt.Fprintf(w, "%-*s = %s\n", width, kv.Key, kv.Value); err != nil {
			return err
		}
	}
	return nil
}

// Dash renders an empty string as "-".
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Wait renders how long something has waited since since, to the second;
// "-" for a zero time.
func Wait(now, since time.Time) string {
	if since.IsZero() {
		return "-"
	}
	d := now.Sub(since)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}
