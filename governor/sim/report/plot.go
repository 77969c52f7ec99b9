package report

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one line of a chart.
type Series struct {
	Name string
	X, Y []float64
}

// Chart is a line chart rendered to PNG with the standard library's image
// packages and x/image's built-in bitmap font.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// YMax fixes the top of the Y axis; 0 means the data's maximum.
	YMax float64
}

var palette = []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255}, {255, 127, 14, 255}}

const (
	width, height = 900, 420
	left, right   = 70, 20
	top, bottom   = 40, 50
)

// WritePNG renders the chart.
func (c *Chart) WritePNG(w io.Writer) error {
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	xmin, xmax, ymax := c.bounds()
	px := func(x float64) int { return left + int((x-xmin)/(xmax-xmin)*float64(width-left-right)) }
	py := func(y float64) int { return height - bottom - int(y/ymax*float64(height-top-bottom)) }
	grey, black := color.RGBA{200, 200, 200, 255}, color.RGBA{0, 0, 0, 255}
	for i := 0; i <= 5; i++ {
		y := ymax * float64(i) / 5
		line(img, left, py(y), width-right, py(y), grey)
		text(img, 4, py(y)+4, trim(y), black)
		x := xmin + (xmax-xmin)*float64(i)/5
		text(img, px(x)-12, height-bottom+16, trim(x), black)
	}
	line(img, left, top, left, height-bottom, black)
	line(img, left, height-bottom, width-right, height-bottom, black)
	text(img, left, 20, c.Title, black)
	text(img, width/2-60, height-12, c.XLabel, black)
	text(img, 4, top-8, c.YLabel, black)
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		for k := 1; k < len(s.X); k++ {
			line(img, px(s.X[k-1]), py(s.Y[k-1]), px(s.X[k]), py(s.Y[k]), col)
		}
		lx, ly := width-right-200, top+14+16*i
		for d := 0; d < 3; d++ {
			line(img, lx, ly-4+d, lx+24, ly-4+d, col)
		}
		text(img, lx+30, ly, s.Name, black)
	}
	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("encoding chart %q: %w", c.Title, err)
	}
	return nil
}

func (c *Chart) bounds() (xmin, xmax, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i, x := range s.X {
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			ymax = math.Max(ymax, s.Y[i])
		}
	}
	if c.YMax > 0 {
		ymax = c.YMax
	}
	if math.IsInf(xmin, 0) || xmax <= xmin {
		xmin, xmax = 0, 1
	}
	if ymax <= 0 {
		ymax = 1
	}
	return xmin, xmax, ymax
}

func trim(v float64) string {
	if math.Abs(v) >= 10 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

func text(img *image.RGBA, x, y int, s string, col color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(col), Face: basicfont.Face7x13,
		Dot: fixed.Point26_6{X: fixed.I(x), Y: fixed.I(y)}}
	d.DrawString(s)
}

// line draws with Bresenham's algorithm.
func line(img *image.RGBA, x0, y0, x1, y1 int, col color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.SetRGBA(x0, y0, col)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
