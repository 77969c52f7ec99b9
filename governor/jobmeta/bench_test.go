package jobmeta

import (
	"testing"
	"time"
)

// BenchmarkVerify: the store verifies every job it converts.
func BenchmarkVerify(b *testing.B) {
	s := testSealer()
	j := MakeJob("train", "ml").GPUs(4).Count(8).Meta(Class, "high", "team", "vision").Build()
	if err := s.Admit(j, Record{}, Stamp{Now: t0}); err != nil {
		b.Fatal(err)
	}
	j = stored(j, t0.Add(time.Second))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Verify(j); err != nil {
			b.Fatal(err)
		}
	}
}
