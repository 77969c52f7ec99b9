package browser

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Problem is one accessibility finding on a page.
type Problem struct {
	Kind    string // "label", "alt", "contrast" or "color"
	Element string // a short description of the element (tag, id, text)
	Detail  string
}

func (p Problem) String() string { return p.Kind + ": " + p.Element + ": " + p.Detail }

// a11yScript collects what Accessibility judges: form controls without a
// label, images without alt, SVG images without a name, and for every
// visible element with its own text the computed text colour, font and the
// background colours from the element up to the root.
const a11yScript = `(() => {
	const desc = e => {
		let s = e.tagName.toLowerCase();
		if (e.id) s += "#" + e.id;
		const n = e.getAttribute("name"); if (n) s += "[name=" + n + "]";
		const t = (e.innerText || "").trim().slice(0, 40); if (t) s += " \"" + t + "\"";
		return s;
	};
	const visible = e => { const r = e.getBoundingClientRect(); const cs = getComputedStyle(e);
		return r.width > 0 && r.height > 0 && cs.visibility !== "hidden" && cs.display !== "none"; };
	const unlabeled = [];
	for (const e of document.querySelectorAll("input, select, textarea")) {
		const type = (e.getAttribute("type") || "").toLowerCase();
		if (["hidden", "submit", "button", "reset", "image"].includes(type)) continue;
		const named = (e.labels && e.labels.length > 0) || e.getAttribute("aria-label") ||
			e.getAttribute("aria-labelledby") || e.getAttribute("title");
		if (!named) unlabeled.push(desc(e));
	}
	const noAlt = Array.from(document.querySelectorAll("img:not([alt])")).map(desc);
	const svgNoName = Array.from(document.querySelectorAll("svg[role=img]"))
		.filter(s => !s.getAttribute("aria-label") && !s.getAttribute("aria-labelledby") && !s.querySelector("title"))
		.map(desc);
	const texts = [];
	for (const e of document.body.querySelectorAll("*")) {
		if (["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "OPTION"].includes(e.tagName)) continue;
		if (e.closest("svg")) continue;
		const own = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim() !== "");
		if (!own || !visible(e)) continue;
		const cs = getComputedStyle(e);
		const bgs = [];
		for (let a = e; a; a = a.parentElement) bgs.push(getComputedStyle(a).backgroundColor);
		texts.push({el: desc(e), fg: cs.color, bgs: bgs, size: parseFloat(cs.fontSize), weight: parseInt(cs.fontWeight, 10) || 400, opacity: parseFloat(cs.opacity)});
	}
	return {unlabeled, noAlt, svgNoName, texts};
})()`

type a11yReport struct {
	Unlabeled []string `json:"unlabeled"`
	NoAlt     []string `json:"noAlt"`
	SVGNoName []string `json:"svgNoName"`
	Texts     []struct {
		El     string   `json:"el"`
		FG     string   `json:"fg"`
		BGs    []string `json:"bgs"`
		Size   float64  `json:"size"`
		Weight int      `json:"weight"`
	} `json:"texts"`
}

// Accessibility checks the current page: every form control has a label,
// every image an alt text (SVG images a name), and every visible text meets
// WCAG 2 AA contrast against the background it is drawn on (4.5:1, or 3:1
// for large text: ≥ 24 px, or ≥ 18.66 px bold), computed from the
// computed styles. Background images and gradients are not seen: the
// check composites background colours only.
func (b *Browser) Accessibility() ([]Problem, error) {
	var r a11yReport
	if err := b.Eval(a11yScript, &r); err != nil {
		return nil, err
	}
	var ps []Problem
	for _, e := range r.Unlabeled {
		ps = append(ps, Problem{"label", e, "form control without a label"})
	}
	for _, e := range r.NoAlt {
		ps = append(ps, Problem{"alt", e, "image without alt"})
	}
	for _, e := range r.SVGNoName {
		ps = append(ps, Problem{"alt", e, "svg role=img without a title or aria-label"})
	}
	for _, t := range r.Texts {
		ratio, err := effectiveContrast(t.FG, t.BGs)
		if err != nil {
			ps = append(ps, Problem{"color", t.El, err.Error()})
			continue
		}
		need := 4.5
		if t.Size >= 24 || (t.Size >= 18.66 && t.Weight >= 700) {
			need = 3
		}
		if ratio < need {
			ps = append(ps, Problem{"contrast", t.El, fmt.Sprintf("%.2f:1 < %.1f:1 (text %s on %s)", ratio, need, t.FG, strings.Join(t.BGs, " < "))})
		}
	}
	return ps, nil
}

// rgba is a colour with straight (not premultiplied) alpha, channels 0..1.
type rgba struct{ r, g, b, a float64 }

// parseColor reads a computed CSS colour: rgb(…) or rgba(…), with commas or
// spaces, as getComputedStyle returns for sRGB colours.
func parseColor(s string) (rgba, error) {
	s = strings.TrimSpace(s)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || (s[:open] != "rgb" && s[:open] != "rgba") {
		return rgba{}, fmt.Errorf("unsupported colour %q", s)
	}
	fields := strings.FieldsFunc(s[open+1:end], func(r rune) bool { return r == ',' || r == ' ' || r == '/' })
	if len(fields) != 3 && len(fields) != 4 {
		return rgba{}, fmt.Errorf("unsupported colour %q", s)
	}
	var v [4]float64
	v[3] = 1
	for i, f := range fields {
		n, err := strconv.ParseFloat(strings.TrimSuffix(f, "%"), 64)
		if err != nil {
			return rgba{}, fmt.Errorf("colour %q: %w", s, err)
		}
		switch {
		case strings.HasSuffix(f, "%"):
			n /= 100
		case i < 3:
			n /= 255
		}
		v[i] = n
	}
	return rgba{v[0], v[1], v[2], v[3]}, nil
}

// over composites c over an opaque background.
func (c rgba) over(bg rgba) rgba {
	mix := func(x, y float64) float64 { return x*c.a + y*(1-c.a) }
	return rgba{mix(c.r, bg.r), mix(c.g, bg.g), mix(c.b, bg.b), 1}
}

// luminance is WCAG 2's relative luminance of an opaque colour.
func (c rgba) luminance() float64 {
	lin := func(x float64) float64 {
		if x <= 0.04045 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.r) + 0.7152*lin(c.g) + 0.0722*lin(c.b)
}

// contrastRatio is WCAG 2's contrast ratio of two opaque colours.
func contrastRatio(a, b rgba) float64 {
	la, lb := a.luminance(), b.luminance()
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// effectiveContrast composites the backgrounds (innermost first) over a
// white canvas, then the text colour over them, and returns the ratio.
func effectiveContrast(fg string, bgs []string) (float64, error) {
	bg := rgba{1, 1, 1, 1}
	for i := len(bgs) - 1; i >= 0; i-- {
		c, err := parseColor(bgs[i])
		if err != nil {
			return 0, err
		}
		bg = c.over(bg)
	}
	f, err := parseColor(fg)
	if err != nil {
		return 0, err
	}
	return contrastRatio(f.over(bg), bg), nil
}
