// Package draw pictures a tile map (package tilemap): the pairs the mask
// keeps, as exact density per pixel where the grid is larger than the
// image, beside the kernel's tile map (skipped, partial and full tiles),
// with a legend and the counts. It lays the picture out once, as rectangles
// and text, and writes it as SVG (plain text) or PNG (image/png, with the
// fixed-width face of golang.org/x/image/font/basicfont for the text).
package draw

import (
	"fmt"
	"image/color"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/tilemap"
)

// MaxCells is the default longest side of a panel, in raster cells.
const MaxCells = 512

// maxScale bounds the pixels per cell of a small grid.
const maxScale = 16

// Grid returns the raster for a Sq x Skv grid whose longer side is at most
// maxCells cells (one cell per pair when the grid fits), keeping the
// aspect ratio, and the pixels per cell that bring a small grid to about
// maxCells pixels.
func Grid(sq, skv int64, maxCells int) (tilemap.Grid, int) {
	long := max(sq, skv)
	if long <= int64(maxCells) {
		return tilemap.Grid{Rows: int(sq), Cols: int(skv)}, max(1, min(maxScale, maxCells/int(long)))
	}
	return tilemap.Grid{Rows: int(max(1, sq*int64(maxCells)/long)), Cols: int(max(1, skv*int64(maxCells)/long))}, 1
}

// Picture is what to draw: a tile map built with a raster (Options.Grid),
// the pixels per raster cell, and a title line.
type Picture struct {
	Map   *tilemap.Map
	Scale int
	Title string
	// Lines are more caption lines, after the counts (maskc draw: the
	// tile list and its cost estimates).
	Lines []string
}

// Colors of the picture.
var (
	background   = color.RGBA{255, 255, 255, 255}
	ink          = color.RGBA{32, 32, 32, 255}
	densityZero  = color.RGBA{255, 255, 255, 255}
	densityOne   = color.RGBA{24, 46, 122, 255}
	frame        = color.RGBA{160, 160, 160, 255}
	tileGridLine = color.RGBA{255, 255, 255, 255}
	stateColors  = [3]color.RGBA{
		tilemap.Skipped: {232, 232, 232, 255},
		tilemap.Partial: {240, 160, 64, 255},
		tilemap.Full:    {46, 139, 87, 255},
	}
)

// rect is a filled rectangle in pixels.
type rect struct {
	x, y, w, h int
	c          color.RGBA
}

// text is one line of text whose baseline starts at (x, y).
type text struct {
	x, y int
	s    string
}

// Canvas is a laid-out picture: rectangles painted in order, then text.
type Canvas struct {
	W, H  int
	rects []rect
	texts []text
}

// Layout geometry, in pixels.
const (
	margin    = 16
	gap       = 32
	lineH     = 16
	charW     = 7 // basicfont.Face7x13's advance
	swatch    = 12
	minTilepx = 4 // tile boundaries are drawn when tiles are at least this wide and tall
)

// Layout lays the picture out: the title, the density panel and the tile
// panel side by side, the legend and the counts below.
func Layout(p Picture) (*Canvas, error) {
	m := p.Map
	if m == nil || m.Grid == nil || len(m.Raster) != m.Grid.Rows*m.Grid.Cols {
		return nil, fmt.Errorf("draw: the tile map has no raster")
	}
	s := max(1, p.Scale)
	g := m.Grid
	pw, ph := g.Cols*s, g.Rows*s
	c := &Canvas{}
	y := margin + 12
	c.texts = append(c.texts, text{margin, y, p.Title})
	y += lineH + 4
	leftX, rightX := margin, margin+pw+gap
	c.texts = append(c.texts,
		text{leftX, y, fmt.Sprintf("kept pairs (q down, kv across; %d x %d cells)", g.Rows, g.Cols)},
		text{rightX, y, fmt.Sprintf("kernel tiles: %s %dx%d, %s", m.Platform, m.BlockM, m.BlockN, m.Sparsity)})
	top := y + 8
	c.frame(leftX, top, pw, ph)
	c.frame(rightX, top, pw, ph)
	c.densityPanel(m, leftX, top, s)
	c.tilePanel(m, rightX, top, s)

	y = top + ph + 8 + lineH
	x := margin
	for _, st := range []tilemap.State{tilemap.Skipped, tilemap.Partial, tilemap.Full} {
		c.rects = append(c.rects, rect{x, y - swatch + 2, swatch, swatch, stateColors[st]})
		label := map[tilemap.State]string{tilemap.Skipped: "skipped tile", tilemap.Partial: "partial tile (mask applied)", tilemap.Full: "full tile (no mask work)"}[st]
		c.texts = append(c.texts, text{x + swatch + 6, y, label})
		x += swatch + 6 + charW*len(label) + 18
	}
	c.frame(x, y-swatch+2, 2*swatch, swatch)
	c.rects = append(c.rects, rect{x, y - swatch + 2, swatch, swatch, densityZero}, rect{x + swatch, y - swatch + 2, swatch, swatch, densityOne})
	c.texts = append(c.texts, text{x + 2*swatch + 6, y, "density 0 .. 1"})
	x += 2*swatch + 6 + charW*len("density 0 .. 1")
	ct := m.Counts
	lines := []string{
		fmt.Sprintf("kept pairs %d of %d (density %.4f), slice b=%d h=%d", ct.KeptPairs, ct.Pairs, ct.Density, m.B, m.H),
		fmt.Sprintf("tiles %d: visited %d, with kept pairs %d, full %d", ct.Tiles, ct.Visited, ct.WithKept, ct.Full),
	}
	lines = append(lines, p.Lines...)
	width := max(x, 2*margin+2*pw+gap, 2*margin+charW*len(p.Title))
	for _, ln := range lines {
		y += lineH + 2
		c.texts = append(c.texts, text{margin, y, ln})
		width = max(width, 2*margin+charW*len(ln))
	}
	c.W, c.H = width, y+margin
	c.rects = append([]rect{{0, 0, c.W, c.H, background}}, c.rects...)
	return c, nil
}

// frame draws a one-pixel border around a panel.
func (c *Canvas) frame(x, y, w, h int) {
	c.rects = append(c.rects, rect{x - 1, y - 1, w + 2, h + 2, frame})
}

// mix interpolates between two colors, t in [0, 1].
func mix(a, b color.RGBA, t float64) color.RGBA {
	l := func(x, y uint8) uint8 { return uint8(float64(x) + (float64(y)-float64(x))*t + 0.5) }
	return color.RGBA{l(a.R, b.R), l(a.G, b.G), l(a.B, b.B), 255}
}

// densityPanel paints each cell by its exact kept density, merging runs of
// equal color along a row.
func (c *Canvas) densityPanel(m *tilemap.Map, x0, y0, s int) {
	g := m.Grid
	for r := 0; r < g.Rows; r++ {
		row := make([]color.RGBA, g.Cols)
		for col := range row {
			row[col] = mix(densityZero, densityOne, float64(m.Raster[r*g.Cols+col])/float64(m.CellPairs(r, col)))
		}
		c.runs(row, x0, y0+r*s, s)
	}
}

// tilePanel paints each cell with the colors of the tiles it overlaps,
// weighted by the pairs of the overlap (a cell inside one tile gets that
// tile's color), and the tile boundaries when tiles are large enough.
func (c *Canvas) tilePanel(m *tilemap.Map, x0, y0, s int) {
	g := m.Grid
	for r := 0; r < g.Rows; r++ {
		q0, q1 := tilemap.CellRange(r, g.Rows, m.Sq)
		row := make([]color.RGBA, g.Cols)
		for col := range row {
			k0, k1 := tilemap.CellRange(col, g.Cols, m.Skv)
			var acc [3]float64
			var total float64
			for qt := q0 / m.BlockM; qt <= (q1-1)/m.BlockM; qt++ {
				rows := min(q1, (qt+1)*m.BlockM) - max(q0, qt*m.BlockM)
				for kt := k0 / m.BlockN; kt <= (k1-1)/m.BlockN; kt++ {
					w := float64(rows * (min(k1, (kt+1)*m.BlockN) - max(k0, kt*m.BlockN)))
					sc := stateColors[m.At(int(qt), int(kt))]
					acc[0] += w * float64(sc.R)
					acc[1] += w * float64(sc.G)
					acc[2] += w * float64(sc.B)
					total += w
				}
			}
			row[col] = color.RGBA{uint8(acc[0]/total + 0.5), uint8(acc[1]/total + 0.5), uint8(acc[2]/total + 0.5), 255}
		}
		c.runs(row, x0, y0+r*s, s)
	}
	// Tile boundaries, where every tile spans at least minTilepx pixels.
	pw, ph := g.Cols*s, g.Rows*s
	tw := float64(pw) * float64(m.BlockN) / float64(m.Skv)
	th := float64(ph) * float64(m.BlockM) / float64(m.Sq)
	if tw < minTilepx || th < minTilepx {
		return
	}
	for kt := 1; kt < m.KVTiles; kt++ {
		c.rects = append(c.rects, rect{x0 + int(float64(kt)*tw), y0, 1, ph, tileGridLine})
	}
	for qt := 1; qt < m.QTiles; qt++ {
		c.rects = append(c.rects, rect{x0, y0 + int(float64(qt)*th), pw, 1, tileGridLine})
	}
}

// runs paints one raster row, one rectangle per run of equal color.
func (c *Canvas) runs(row []color.RGBA, x0, y, s int) {
	for i := 0; i < len(row); {
		j := i + 1
		for j < len(row) && row[j] == row[i] {
			j++
		}
		c.rects = append(c.rects, rect{x0 + i*s, y, (j - i) * s, s, row[i]})
		i = j
	}
}

// hex returns #rrggbb.
func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// escape escapes text for XML: control characters (a file name may hold
// them; XML 1.0 allows none but tab and line ends, escaped or not) and
// invalid UTF-8 are written as dsl.Printable writes them, and so are the
// non-characters U+FFFE and U+FFFF.
func escape(s string) string {
	s = strings.NewReplacer("\ufffe", `\ufffe`, "\uffff", `\uffff`).Replace(dsl.Printable(s))
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
