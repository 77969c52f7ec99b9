package browser

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseColor(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    rgba
		wantErr bool
	}{
		"rgb commas":        {in: "rgb(255, 0, 51)", want: rgba{1, 0, 0.2, 1}},
		"rgba":              {in: "rgba(0, 0, 0, 0.5)", want: rgba{0, 0, 0, 0.5}},
		"space syntax":      {in: "rgb(255 255 255 / 0)", want: rgba{1, 1, 1, 0}},
		"percent alpha":     {in: "rgb(0 0 0 / 50%)", want: rgba{0, 0, 0, 0.5}},
		"named unsupported": {in: "red", wantErr: true},
		"oklch unsupported": {in: "oklch(0.5 0.1 20)", wantErr: true},
		"garbage channel":   {in: "rgb(a, b, c)", wantErr: true},
		"two channels":      {in: "rgb(1, 2)", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseColor(tc.in)
			if tc.wantErr {
				must.Error(t, err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

func TestEffectiveContrast(t *testing.T) {
	cases := map[string]struct {
		fg       string
		bgs      []string
		min, max float64
	}{
		// WCAG's extremes and a few known pairs (WebAIM's checker).
		"black on white":            {fg: "rgb(0, 0, 0)", bgs: []string{"rgb(255, 255, 255)"}, min: 20.99, max: 21.01},
		"white on white":            {fg: "rgb(255, 255, 255)", bgs: []string{"rgba(0, 0, 0, 0)"}, min: 1, max: 1.001},
		"#767676 on white is 4.54":  {fg: "rgb(118, 118, 118)", bgs: []string{"rgba(0, 0, 0, 0)", "rgb(255, 255, 255)"}, min: 4.53, max: 4.55},
		"#777 on white fails AA":    {fg: "rgb(119, 119, 119)", bgs: []string{"rgb(255, 255, 255)"}, min: 4.47, max: 4.49},
		"transparent inherits root": {fg: "rgb(255, 255, 255)", bgs: []string{"rgba(0, 0, 0, 0)", "rgba(0, 0, 0, 0)", "rgb(0, 0, 0)"}, min: 20.99, max: 21.01},
		// Half-transparent black over the white canvas is mid grey, about 4:1 either way.
		"half black under white text": {fg: "rgb(255, 255, 255)", bgs: []string{"rgba(0, 0, 0, 0.5)"}, min: 3.9, max: 4.1},
		"half transparent text":       {fg: "rgba(0, 0, 0, 0.5)", bgs: []string{"rgb(255, 255, 255)"}, min: 3.9, max: 4.1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := effectiveContrast(tc.fg, tc.bgs)
			must.NoError(t, err)
			must.Between(t, tc.min, got, tc.max)
		})
	}
	_, err := effectiveContrast("rgb(0,0,0)", []string{"color(display-p3 1 0 0)"})
	must.Error(t, err)
}
