package draw

import (
	"bufio"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// SVG writes the canvas as an SVG document: one <rect> per rectangle, one
// <text> per line, in a monospace font.
func (c *Canvas) SVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" shape-rendering=\"crispEdges\">\n", c.W, c.H, c.W, c.H)
	for _, r := range c.rects {
		fmt.Fprintf(bw, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", r.x, r.y, r.w, r.h, hex(r.c))
	}
	fmt.Fprintf(bw, "<g font-family=\"monospace\" font-size=\"12\" fill=\"%s\">\n", hex(ink))
	for _, t := range c.texts {
		fmt.Fprintf(bw, "<text x=\"%d\" y=\"%d\">%s</text>\n", t.x, t.y, escape(t.s))
	}
	bw.WriteString("</g>\n</svg>\n")
	return bw.Flush()
}

// Image renders the canvas.
func (c *Canvas) Image() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, c.W, c.H))
	for _, r := range c.rects {
		draw.Draw(img, image.Rect(r.x, r.y, r.x+r.w, r.y+r.h), image.NewUniform(r.c), image.Point{}, draw.Src)
	}
	d := font.Drawer{Dst: img, Src: image.NewUniform(ink), Face: basicfont.Face7x13}
	for _, t := range c.texts {
		d.Dot = fixed.P(t.x, t.y)
		d.DrawString(t.s)
	}
	return img
}

// PNG writes the canvas as a PNG image.
func (c *Canvas) PNG(w io.Writer) error {
	return png.Encode(w, c.Image())
}
