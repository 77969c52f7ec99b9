package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// A job decoded with the wire types converts to the same engine view as
// the job decoded in full.
func TestDecodeJobConvertsLikeAFullDecode(t *testing.T) {
	_, final := loadFixtures(t)
	must.SliceNotEmpty(t, final.Jobs)
	for _, full := range final.Jobs {
		raw, err := json.Marshal(full)
		must.NoError(t, err)
		got, err := DecodeJob(raw)
		must.NoError(t, err)
		must.Eq(t, ConvertJob(full), ConvertJob(got), must.Sprint(*full.ID))
		must.Eq(t, full.Meta, got.Meta)
		for i, tg := range got.TaskGroups {
			for k, task := range tg.Tasks {
				must.Nil(t, task.Config, must.Sprint("driver config is skipped"))
				must.Eq(t, full.TaskGroups[i].Tasks[k].Resources, task.Resources)
			}
		}
	}
}

func TestDecodeJobRefusesBadInput(t *testing.T) {
	cases := map[string]struct{ body string }{
		"not json":        {body: `{"ID": `},
		"null":            {body: `null`},
		"wrong type":      {body: `{"ID": 5}`},
		"groups not list": {body: `{"ID": "a", "TaskGroups": {"Name": "g"}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j, err := DecodeJob([]byte(tc.body))
			must.Error(t, err)
			must.Nil(t, j)
		})
	}
}

func TestDecodeJobKeepsNullEntries(t *testing.T) {
	j, err := DecodeJob([]byte(`{"ID": "a", "TaskGroups": [null, {"Name": "g", "Tasks": [null, {"Name": "t", "Config": {"x": [1]}}]}]}`))
	must.NoError(t, err)
	must.SliceLen(t, 1, j.TaskGroups, must.Sprint("a null group is dropped"))
	must.SliceLen(t, 1, j.TaskGroups[0].Tasks)
	must.Eq(t, "t", j.TaskGroups[0].Tasks[0].Name)
}

// A malformed payload ends the stream with an error (the watcher then
// resyncs); it never reaches the store.
func TestReadFramesReportsBadPayload(t *testing.T) {
	stream := `{"Index": 5, "Events": [{"Topic": "Job", "Type": "JobRegistered", "Index": 5, "Payload": {"Job": {"ID": 7}}}]}`
	ch := make(chan *Frame, 2)
	ReadFrames(context.Background(), bytes.NewReader([]byte(stream)), ch)
	f := <-ch
	must.Error(t, f.Err)
	must.StrContains(t, f.Err.Error(), "Job.ID")
}

// BenchmarkReplayStream decodes the recorded event stream and applies it
// to a store, as the watcher does.
func BenchmarkReplayStream(b *testing.B) {
	data, err := os.ReadFile(streamFixture)
	must.NoError(b, err)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ch := make(chan *Frame, 1024)
		ReadFrames(context.Background(), bytes.NewReader(data), ch)
		close(ch)
		s := NewStore(nil, nil)
		for f := range ch {
			if f.Err == io.EOF {
				break
			}
			must.NoError(b, f.Err)
			must.NoError(b, s.Apply(f))
		}
	}
}

// BenchmarkDecodeJob decodes a recorded job payload.
func BenchmarkDecodeJob(b *testing.B) {
	data, err := os.ReadFile(finalFixture)
	must.NoError(b, err)
	var final Initial
	must.NoError(b, json.Unmarshal(data, &final))
	raw, err := json.Marshal(final.Jobs[0])
	must.NoError(b, err)
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := DecodeJob(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("api.Job", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var j api.Job
			if err := json.Unmarshal(raw, &j); err != nil {
				b.Fatal(err)
			}
		}
	})
}
