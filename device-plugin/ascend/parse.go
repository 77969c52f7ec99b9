package ascend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chip is one NPU chip as `npu-smi info` reports it.
type Chip struct {
	NPU    int    // card id (NPU column)
	Chip   int    // chip id on the card
	Device int    // logical device id: /dev/davinci<Device>, ASCEND_VISIBLE_DEVICES
	Name   string // "910B3", "310P3"
	Health string // "OK", "Warning", "Alarm", "Critical", …
	BusID  string
	// Statistics from the same table.
	PowerW       float64 // 0 when npu-smi says NA
	TemperatureC float64
	AICorePct    float64
	MemUsedMiB   int64 // HBM when the table has an HBM column, else DDR
	MemTotalMiB  int64
}

// ParseInfo parses the output of `npu-smi info` in the table layouts of
// Ascend 910B (one chip per NPU, HBM column) and 310P (several chips per
// card, a Device column). Errors name the output line. It never panics:
// every cell and field is checked before it is read (fuzzed by
// FuzzParseInfo), and a chip list it returns has distinct, non-negative
// device ids and finite numbers.
func ParseInfo(out []byte) ([]Chip, error) {
	p := &parser{seen: map[int]int{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), maxLine)
	for sc.Scan() {
		p.line++
		if err := p.feed(sc.Text()); err != nil {
			return nil, fmt.Errorf("line %d: %w", p.line, err)
		}
		if p.done {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", p.line+1, err)
	}
	if !p.header {
		return nil, fmt.Errorf("unrecognised output (no NPU table): %q", firstLine(out))
	}
	return p.chips, nil
}

// maxLine bounds one line of npu-smi output; a longer line is an error,
// not a silently truncated table.
const maxLine = 1024 * 1024

type parser struct {
	line      int
	header    bool // saw the "NPU Name | Health" header
	hasDevice bool // the chip header has a Device column (310P)
	hasHBM    bool
	done      bool
	card      *Chip // the NPU row waiting for its chip rows
	chips     []Chip
	seen      map[int]int // device id → line of the chip row that named it
}

func (p *parser) feed(raw string) error {
	// A non-UTF-8 byte (a banner in a local encoding, a corrupt line)
	// must not reach a device attribute: Nomad's plugin protocol cannot
	// carry it.
	s := strings.TrimSpace(strings.ToValidUTF8(raw, "\uFFFD"))
	if !strings.HasPrefix(s, "|") {
		return nil // borders and banners
	}
	cells := splitCells(s)
	if len(cells) == 0 {
		return nil
	}
	first := strings.Fields(cells[0])
	switch {
	case len(first) >= 2 && first[0] == "NPU" && first[1] == "Name":
		p.header = true
		return nil
	case len(first) >= 2 && first[0] == "NPU" && first[1] == "Chip" && len(cells) > 1 && strings.Contains(cells[1], "Process"):
		p.done = true // the process table follows
		return nil
	case len(first) >= 1 && first[0] == "Chip":
		p.hasDevice = len(first) >= 2 && first[1] == "Device"
		p.hasHBM = len(cells) > 2 && strings.Contains(cells[2], "HBM")
		return nil
	}
	if !p.header || len(cells) < 3 {
		return nil
	}
	// An NPU row starts "<id> <name>"; a chip row "<chip>" or, on 310P,
	// "<chip> <device>" (two numbers).
	if len(first) == 0 {
		return errors.New("row has no NPU or chip id in its first cell")
	}
	if len(first) >= 2 && !isNumber(first[1]) {
		return p.npuRow(first, cells)
	}
	return p.chipRow(first, cells)
}

// npuRow parses "| 0  910B3 | OK | 93.6  36  0 / 0 |".
func (p *parser) npuRow(first, cells []string) error {
	id, err := parseID(first[0])
	if err != nil {
		return fmt.Errorf("NPU id %w", err)
	}
	if strings.IndexFunc(first[1], func(r rune) bool { return r == '/' || r == utf8.RuneError || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("NPU %d name %q is not a chip name", id, first[1])
	}
	c := &Chip{NPU: id, Name: first[1], Health: strings.TrimSpace(cells[1])}
	if c.Health == "" {
		return fmt.Errorf("NPU %d has no health value", id)
	}
	f := strings.Fields(cells[2])
	if len(f) >= 2 {
		c.PowerW, _ = parseNA(f[0])
		if c.TemperatureC, err = parseNA(f[1]); err != nil {
			return fmt.Errorf("NPU %d temperature: %w", id, err)
		}
	}
	p.card = c
	return nil
}

// chipRow parses "| 0 [device] | 0000:C1:00.0 | 0  0 / 0  3161 / 65536 |".
func (p *parser) chipRow(first, cells []string) error {
	if p.card == nil {
		return errors.New("chip row before any NPU row")
	}
	chipID, err := parseID(first[0])
	if err != nil {
		return fmt.Errorf("chip id %w", err)
	}
	c := *p.card
	c.Chip, c.Device, c.BusID = chipID, c.NPU, strings.TrimSpace(cells[1])
	if p.hasDevice {
		if len(first) < 2 {
			return fmt.Errorf("NPU %d chip %d has no device id", c.NPU, chipID)
		}
		if c.Device, err = parseID(first[1]); err != nil {
			return fmt.Errorf("device id %w", err)
		}
	}
	if err := parseUsage(&c, cells[2], p.hasHBM); err != nil {
		return fmt.Errorf("NPU %d chip %d: %w", c.NPU, chipID, err)
	}
	// Two chips with one device id would be two Nomad devices with one ID
	// (910-style output with several chips per NPU and no Device column).
	if at, dup := p.seen[c.Device]; dup {
		return fmt.Errorf("NPU %d chip %d: device id %d already used by the chip row on line %d", c.NPU, chipID, c.Device, at)
	}
	p.seen[c.Device] = p.line
	p.chips = append(p.chips, c)
	return nil
}

// parseUsage reads "AICore  used / total [hbmUsed / hbmTotal]".
func parseUsage(c *Chip, cell string, hbm bool) error {
	f := strings.Fields(strings.ReplaceAll(cell, "/", " / "))
	if len(f) < 4 {
		return fmt.Errorf("usage %q: want AICore and memory used / total", strings.TrimSpace(cell))
	}
	var err error
	if c.AICorePct, err = parseNA(f[0]); err != nil {
		return fmt.Errorf("AICore: %w", err)
	}
	pairs := f[1:]
	if hbm && len(pairs) >= 6 {
		pairs = pairs[3:]
	}
	if len(pairs) < 3 || pairs[1] != "/" {
		return fmt.Errorf("memory usage %q: want used / total", strings.TrimSpace(cell))
	}
	used, err1 := strconv.ParseInt(pairs[0], 10, 64)
	total, err2 := strconv.ParseInt(pairs[2], 10, 64)
	if err1 != nil || err2 != nil || used < 0 || total < 0 {
		return fmt.Errorf("memory usage %q is not numeric", strings.Join(pairs[:3], " "))
	}
	c.MemUsedMiB, c.MemTotalMiB = used, total
	return nil
}

func parseNA(s string) (float64, error) {
	if s == "NA" || s == "-" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

// parseID reads a card, chip or device id: a non-negative whole number.
func parseID(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return n, nil
}

func splitCells(s string) []string {
	parts := strings.Split(strings.Trim(s, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func firstLine(out []byte) string {
	s := strings.TrimSpace(string(out))
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 120 {
		cut := 120
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut-- // never split a character
		}
		line = line[:cut] + "…"
	}
	return line
}

// ModelName turns npu-smi's chip name into the group's model name:
// "910B3" → "Ascend910B", "310P3" → "Ascend310P", "910" → "Ascend910".
func ModelName(name string) string {
	n := strings.TrimPrefix(strings.TrimSpace(name), "Ascend")
	for _, m := range []string{"910B", "910C", "310P", "310B"} {
		if strings.HasPrefix(n, m) {
			return "Ascend" + m
		}
	}
	for _, m := range []string{"910", "310"} {
		if strings.HasPrefix(n, m) {
			return "Ascend" + m
		}
	}
	if n == "" {
		return "AscendUnknown"
	}
	return "Ascend" + n
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}
