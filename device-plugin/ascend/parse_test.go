package ascend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// table builds npu-smi output: the 910B header (HBM column) and the rows.
func table(rows ...string) []byte {
	head := []string{
		"| NPU   Name | Health | Power(W)    Temp(C)    Hugepages-Usage(page) |",
		"| Chip       | Bus-Id | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB) |",
	}
	return []byte(strings.Join(append(head, rows...), "\n") + "\n")
}

// table310P builds npu-smi output with the 310P header (Device column).
func table310P(rows ...string) []byte {
	head := []string{
		"| NPU   Name | Health | Power(W)    Temp(C)    Hugepages-Usage(page) |",
		"| Chip Device | Bus-Id | AICore(%)   Memory-Usage(MB) |",
	}
	return []byte(strings.Join(append(head, rows...), "\n") + "\n")
}

// TestAudit25_ParserRefusesWhatItCannotRead is the regression test for
// audit #25 (a chip row with an empty first cell panicked in chipRow) and
// for the rest of its class: every malformed row is an error naming its
// line, never a panic, never a device with a made-up id.
func TestAudit25_ParserRefusesWhatItCannotRead(t *testing.T) {
	npu0 := "| 0 910B3 | OK | 93.6 36 0 / 0 |"
	chip0 := "| 0 | 0000:C1:00.0 | 0 0 / 0 3161 / 65536 |"
	cases := map[string]struct {
		out  []byte
		want string
	}{
		"audit #25: chip row with an empty first cell": {
			out:  []byte("| NPU Name | Health | Power(W) Temp(C) |\n| 0 910B3 | OK | 93.6 36 |\n|  | 0000:C1:00.0 | 0 0 / 0 3161 / 65536 |\n"),
			want: "line 3: row has no NPU or chip id in its first cell",
		},
		"blank first cell after a good chip": {
			out:  table(npu0, chip0, "|   | OK | 1 2 |"),
			want: "line 5: row has no NPU or chip id",
		},
		"310P chip row without its device id": {
			out:  table310P("| 1 310P3 | OK | NA 43 0 / 0 |", "| 0 | 0000:01:00.0 | 0 1640 / 44280 |"),
			want: "line 4: NPU 1 chip 0 has no device id",
		},
		"negative NPU id": {
			out:  table("| -1 910B3 | OK | 93.6 36 0 / 0 |", chip0),
			want: `line 3: NPU id "-1" is not a number`,
		},
		"negative device id": {
			out:  table310P("| 1 310P3 | OK | NA 43 0 / 0 |", "| 0 -2 | 0000:01:00.0 | 0 1640 / 44280 |"),
			want: `line 4: device id "-2" is not a number`,
		},
		"NaN temperature": {
			out:  table("| 0 910B3 | OK | 93.6 NaN 0 / 0 |", chip0),
			want: `line 3: NPU 0 temperature: "NaN" is not a number`,
		},
		"infinite AICore": {
			out:  table(npu0, "| 0 | 0000:C1:00.0 | +Inf 0 / 0 3161 / 65536 |"),
			want: `line 4: NPU 0 chip 0: AICore: "+Inf" is not a number`,
		},
		"negative memory": {
			out:  table(npu0, "| 0 | 0000:C1:00.0 | 0 0 / 0 -5 / 65536 |"),
			want: `memory usage "-5 / 65536" is not numeric`,
		},
		"two chips of one NPU without a Device column": {
			out:  table(npu0, chip0, "| 1 | 0000:C1:00.1 | 0 0 / 0 3161 / 65536 |"),
			want: "line 5: NPU 0 chip 1: device id 0 already used by the chip row on line 4",
		},
		"one NPU listed twice": {
			out:  table(npu0, chip0, npu0, chip0),
			want: "line 6: NPU 0 chip 0: device id 0 already used by the chip row on line 4",
		},
		"slash in a chip name": {
			out:  table("| 0 910B/3 | OK | 93.6 36 0 / 0 |", chip0),
			want: `line 3: NPU 0 name "910B/3" is not a chip name`,
		},
		"control character in a chip name": {
			out:  table("| 0 910B\x013 | OK | 93.6 36 0 / 0 |", chip0),
			want: `line 3: NPU 0 name "910B\x013" is not a chip name`,
		},
		"byte that is not UTF-8 in a chip name": {
			out:  table("| 0 910B\xff | OK | 93.6 36 0 / 0 |", chip0),
			want: "line 3: NPU 0 name \"910B\uFFFD\" is not a chip name",
		},
		"line longer than the scanner allows": {
			out:  table(npu0, chip0, "| "+strings.Repeat("x", maxLine)+" |"),
			want: "line 5: bufio.Scanner: token too long",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			chips, err := ParseInfo(tc.out)
			must.ErrorContains(t, err, tc.want)
			must.Nil(t, chips)
		})
	}
}

// TestAudit25_TextIsUTF8 checks that bytes that are not UTF-8 never reach
// a device attribute (a health value here), whatever the table says.
func TestAudit25_TextIsUTF8(t *testing.T) {
	chips, err := ParseInfo(table("| 0 910B3 | Warn\xffing | 93.6 36 0 / 0 |", "| 0 | 0000:C1:00.0 | 0 0 / 0 3161 / 65536 |"))
	must.NoError(t, err)
	must.Len(t, 1, chips)
	must.Eq(t, "Warn\ufffding", chips[0].Health)
}

// TestAudit25_FirstLineKeepsCharactersWhole checks that the "unrecognised
// output" message never cuts a multi-byte character in half.
func TestAudit25_FirstLineKeepsCharactersWhole(t *testing.T) {
	_, err := ParseInfo([]byte(strings.Repeat("é", 100)))
	must.Error(t, err)
	must.StrContains(t, err.Error(), strings.Repeat("é", 60)+"…")
	must.True(t, strings.ToValidUTF8(err.Error(), "?") == err.Error())
}

// TestAudit25_PluginSurvivesAParserPanic checks the guard at the backend
// boundary: should the parser ever panic, Fingerprint and Stats report a
// FingerprintError like any other bad output and the next call works.
func TestAudit25_PluginSurvivesAParserPanic(t *testing.T) {
	b := newBackend(t, "910b.txt")
	b.logger = hclog.NewNullLogger()
	b.parse = func([]byte) ([]Chip, error) {
		var cells []string
		_ = cells[3] // the shape of audit #25's panic
		return nil, nil
	}
	_, err := b.Fingerprint(context.Background())
	var fe *accel.FingerprintError
	must.True(t, errors.As(err, &fe), must.Sprintf("error %v", err))
	must.ErrorIs(t, err, ErrParserPanic)
	must.StrContains(t, err.Error(), "index out of range")
	_, err = b.Stats(context.Background(), nil)
	must.ErrorIs(t, err, ErrParserPanic)

	b.parse = ParseInfo
	devs, err := b.Fingerprint(context.Background())
	must.NoError(t, err)
	must.Len(t, 8, devs)
}
