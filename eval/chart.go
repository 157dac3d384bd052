package eval

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteChart draws recall_any@10 per question type, turn level beside
// session level, as a PNG at path. The gap between the two bars shows
// where recall finds the right conversation but not the right turn.
// gonum/plot embeds its fonts, so this works offline.
func (r Report) WriteChart(path string) error {
	if !strings.EqualFold(filepath.Ext(path), ".png") {
		return fmt.Errorf("eval: chart path %s must end in .png", path)
	}
	var labels []string
	var turn, sess plotter.Values
	for _, m := range r.ByType {
		if m.Answerable == 0 {
			continue
		}
		labels = append(labels, m.Type)
		turn = append(turn, m.Turn.RecallAny10)
		sess = append(sess, m.Session.RecallAny10)
	}
	if len(labels) == 0 {
		return fmt.Errorf("eval: report %q has no answerable questions to chart", r.Name)
	}
	p := plot.New()
	p.Title.Text = "recall_any@10 by question type"
	if r.Name != "" {
		p.Title.Text += " (" + r.Name + ")"
	}
	p.Y.Label.Text = "recall_any@10"
	// Headroom above 1.0 keeps the legend clear of full-height bars.
	p.Y.Min, p.Y.Max = 0, 1.2
	w := vg.Points(14)
	tb, err := plotter.NewBarChart(turn, w)
	if err != nil {
		return fmt.Errorf("turn bars: %w", err)
	}
	tb.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	tb.LineStyle.Width = 0
	tb.Offset = -w / 2
	sb, err := plotter.NewBarChart(sess, w)
	if err != nil {
		return fmt.Errorf("session bars: %w", err)
	}
	sb.Color = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	sb.LineStyle.Width = 0
	sb.Offset = w / 2
	p.Add(tb, sb)
	p.Legend.Add("turn", tb)
	p.Legend.Add("session", sb)
	p.Legend.Top = true
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = 0.5
	// Rotated labels are right-aligned so each ends under its bar pair.
	p.X.Tick.Label.XAlign = draw.XRight
	if err := p.Save(vg.Length(60*len(labels)+160), 10*vg.Centimeter, path); err != nil {
		return fmt.Errorf("save chart %s: %w", path, err)
	}
	return nil
}
