package draw

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/parser"
	"github.com/maskc/maskc/tilemap"
)

// kernelOf generates one attention block of a .flex file of
// tilemap/testdata.
func kernelOf(t *testing.T, file, attention string) *codegen.Kernel {
	t.Helper()
	path := filepath.Join("..", "tilemap", "testdata", file)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := parser.ParseFile(file, text)
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	k, diags := codegen.Generate(p, p.Attention(attention), codegen.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	return k
}

func docIDs(lengths ...int) *eval.Tensor {
	var ids []int64
	for d, n := range lengths {
		for i := 0; i < n; i++ {
			ids = append(ids, int64(d))
		}
	}
	return eval.FromInts(ids...)
}

// pictureCases are drawn into testdata/NAME.svg.
var pictureCases = []struct {
	name, file, attention string
	env                   *eval.Env
	maxCells              int
}{
	{"document", "document.flex", "packed", &eval.Env{B: 1, H: 1, HKV: 1, Q: 1000, KV: 1000, Buffers: map[string]*eval.Tensor{"doc": docIDs(150, 420, 430)}}, 100},
	{"sliding_window", "sliding_window.flex", "local", &eval.Env{B: 1, H: 1, HKV: 1, Q: 1000, KV: 1000}, 100},
	{"prefix", "prefix.flex", "prefix_layer", &eval.Env{B: 1, H: 1, HKV: 1, Q: 600, KV: 800}, 80},
	{"blocks", "blocks.flex", "strided_layer", &eval.Env{B: 1, H: 1, HKV: 1, Q: 1000, KV: 1000}, 100},
}

func canvasOf(t *testing.T, file, attention string, env *eval.Env, maxCells int, p hipsrc.Platform) (*Canvas, *tilemap.Map) {
	t.Helper()
	k := kernelOf(t, file, attention)
	grid, scale := Grid(env.Q, env.KV, maxCells)
	m, err := tilemap.Build(k, env, tilemap.Options{Platform: p, Grid: &grid})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Layout(Picture{Map: m, Scale: scale, Title: file + ": attention " + attention})
	if err != nil {
		t.Fatal(err)
	}
	return c, m
}

// TestGoldenSVG pins the SVG of each case (`go test ./draw -update`
// rewrites testdata/*.svg; open them to review).
func TestGoldenSVG(t *testing.T) {
	for _, pc := range pictureCases {
		c, _ := canvasOf(t, pc.file, pc.attention, pc.env, pc.maxCells, hipsrc.AMD)
		var b bytes.Buffer
		if err := c.SVG(&b); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", pc.name+".svg"), b.Bytes())
	}
}

// TestExactDensity checks that a pixel covering several pairs gets the
// exact fraction kept: a 10 x 10 cell on the diagonal of a causal band
// keeps 55 of its 100 pairs.
func TestExactDensity(t *testing.T) {
	c, m := canvasOf(t, "sliding_window.flex", "local", &eval.Env{B: 1, H: 1, HKV: 1, Q: 1000, KV: 1000}, 100, hipsrc.AMD)
	if m.Grid.Rows != 100 || m.Grid.Cols != 100 || m.Raster[0] != 55 {
		t.Fatalf("grid %+v, cell 0 keeps %d pairs; want 100x100 cells and 55", *m.Grid, m.Raster[0])
	}
	img := c.Image()
	x0, y0 := panelOrigin(t, c)
	if got, want := img.RGBAAt(x0, y0), mix(densityZero, densityOne, 0.55); got != want {
		t.Errorf("diagonal pixel %v, want %v (density 0.55)", got, want)
	}
	if got := img.RGBAAt(x0+50, y0); got != densityZero {
		t.Errorf("pixel above the band %v, want white", got)
	}
	// The tile panel: the first q tile (rows 0..127, 12.8 cells) has its
	// first kv tile partial: the pixel at its corner is the partial color.
	tx := x0 + m.Grid.Cols + gap
	if got := img.RGBAAt(tx, y0); got != stateColors[tilemap.Partial] {
		t.Errorf("tile panel corner %v, want the partial color", got)
	}
	if got := img.RGBAAt(tx+m.Grid.Cols-1, y0); got != stateColors[tilemap.Skipped] {
		t.Errorf("tile panel top right %v, want the skipped color", got)
	}
}

// panelOrigin finds the density panel's top-left pixel: the first rect of
// the panel's size after the frame.
func panelOrigin(t *testing.T, c *Canvas) (int, int) {
	for i, r := range c.rects {
		if r.c == frame {
			return c.rects[i].x + 1, c.rects[i].y + 1
		}
	}
	t.Fatal("no panel frame")
	return 0, 0
}

// TestPNG checks that the PNG decodes to the canvas's size and pixels.
func TestPNG(t *testing.T) {
	pc := pictureCases[0]
	c, _ := canvasOf(t, pc.file, pc.attention, pc.env, pc.maxCells, hipsrc.NVIDIAWGMMA)
	var b bytes.Buffer
	if err := c.PNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != c.W || img.Bounds().Dy() != c.H {
		t.Fatalf("PNG is %v, canvas %dx%d", img.Bounds(), c.W, c.H)
	}
	want := c.Image()
	for y := 0; y < c.H; y += 7 {
		for x := 0; x < c.W; x += 5 {
			r1, g1, b1, _ := img.At(x, y).RGBA()
			r2, g2, b2, _ := want.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 {
				t.Fatalf("pixel (%d, %d) differs after encoding", x, y)
			}
		}
	}
	// Text is drawn: some pixel of the title line is ink.
	inked := false
	for x := 0; x < c.W && !inked; x++ {
		for y := margin; y < margin+14; y++ {
			if want.RGBAAt(x, y) == ink {
				inked = true
				break
			}
		}
	}
	if !inked {
		t.Error("the title left no ink")
	}
}

// TestGrid checks the raster sizes: one cell per pair for small grids,
// scaled up; at most maxCells along the longer side otherwise, with the
// aspect ratio kept.
func TestGrid(t *testing.T) {
	tests := []struct {
		sq, skv          int64
		max              int
		rows, cols, want int
	}{
		{64, 64, 512, 64, 64, 8},
		{1000, 1000, 512, 512, 512, 1},
		{131072, 65536, 512, 512, 256, 1},
		{5, 600, 300, 2, 300, 1},
		{300, 20, 512, 300, 20, 1},
	}
	for _, tc := range tests {
		g, s := Grid(tc.sq, tc.skv, tc.max)
		if g.Rows != tc.rows || g.Cols != tc.cols || s != tc.want {
			t.Errorf("Grid(%d, %d, %d) = %+v x%d, want %dx%d x%d", tc.sq, tc.skv, tc.max, g, s, tc.rows, tc.cols, tc.want)
		}
	}
	if _, err := Layout(Picture{Map: &tilemap.Map{}}); err == nil || !strings.Contains(err.Error(), "raster") {
		t.Errorf("a map without raster: %v", err)
	}
}

// TestSVGTitleIsWellFormed: a title holding control characters (from a
// file name) still gives well-formed XML, the characters shown escaped
// (issue 31: the SVG was not well-formed).
func TestSVGTitleIsWellFormed(t *testing.T) {
	k := kernelOf(t, "sliding_window.flex", "local")
	env := &eval.Env{B: 1, H: 1, HKV: 1, Q: 64, KV: 64}
	grid, scale := Grid(env.Q, env.KV, 64)
	m, err := tilemap.Build(k, env, tilemap.Options{Platform: hipsrc.AMD, Grid: &grid})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Layout(Picture{Map: m, Scale: scale, Title: "evil\x01\x1b[31m\x7f\ufffe<&>\xff.flex"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.SVG(&b); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
	if !bytes.Contains(b.Bytes(), []byte(`evil\x01\x1b[31m\x7f\ufffe&lt;&amp;&gt;\xff.flex`)) {
		t.Errorf("title not shown escaped: %s", b.Bytes())
	}
}
