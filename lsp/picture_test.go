package lsp

import (
	"fmt"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
)

const pictureURI = protocol.DocumentURI("file:///work/doc.flex")

// pictureText has a segments mask (drawn with default documents), a band
// and a block whose mask reads a table the editor cannot guess.
const pictureText = `buffer doc: i32[KV] segments
buffer table: bool[Q, KV]

mask same_doc(b, h, q, kv) = q >= kv and doc[q] == doc[kv]
mask band(b, h, q, kv) = q >= kv and q - kv < 300
mask from_table(b, h, q, kv) = table[q, kv]

attention packed {
    mask = same_doc
}

attention local {
    mask = band
}

attention tabled {
    mask = from_table
}
`

// TestPictures checks the tile-map pictures: a lens per block that runs
// the draw command, which writes a PNG and shows its file:// link, and a
// hover link to the same file; a block whose buffers an editor cannot
// guess says so instead.
func TestPictures(t *testing.T) {
	dir := t.TempDir()
	c := startServerWith(t, Options{PicturesDir: dir})
	init := c.initialize()
	if p := init.Capabilities.ExecuteCommandProvider; p == nil || len(p.Commands) != 1 || p.Commands[0] != drawCommand {
		t.Fatalf("executeCommandProvider %+v, want [%s]", p, drawCommand)
	}
	if d := c.open(pictureURI, pictureText); len(d.Diagnostics) != 0 {
		t.Fatalf("diagnostics: %+v", d.Diagnostics)
	}

	var lenses []protocol.CodeLens
	c.mustCall(protocol.MethodTextDocumentCodeLens, &protocol.CodeLensParams{TextDocument: textDoc(pictureURI)}, &lenses)
	var draws []protocol.CodeLens
	for _, l := range lenses {
		if l.Command != nil && l.Command.Command == drawCommand {
			draws = append(draws, l)
		}
	}
	if len(draws) != 3 {
		t.Fatalf("%d draw lenses, want one per block: %+v", len(draws), lenses)
	}
	if got := draws[0].Command.Title; got != "tile map picture (B=1 H=1 S=2048, amd tiles)" {
		t.Errorf("lens title %q", got)
	}

	// The lens's command draws the picture off the request path and shows
	// its link when it is written.
	var link string
	c.mustCall(protocol.MethodWorkspaceExecuteCommand, &protocol.ExecuteCommandParams{Command: drawCommand, Arguments: draws[0].Command.Arguments}, &link)
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "file" || filepath.Dir(u.Path) != filepath.ToSlash(dir) || !strings.HasPrefix(filepath.Base(u.Path), "doc-packed-") {
		t.Fatalf("command returned %q, want a file:// URL of doc-packed-*.png in %s", link, dir)
	}
	select {
	case m := <-c.shows:
		if !strings.Contains(m.Message, link) {
			t.Errorf("showMessage %q does not link %s", m.Message, link)
		}
	case <-time.After(testTimeout):
		t.Fatal("no showMessage after the draw command")
	}
	f, err := os.Open(u.Path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil || img.Bounds().Dx() < 512 {
		t.Fatalf("picture: %v, bounds %v", err, img.Bounds())
	}

	// The hover on the block links the same picture.
	var h protocol.Hover
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(pictureURI, 7, 12)}, &h)
	if want := "[tile map picture](" + link + ") (B=1 H=1 S=2048, amd tiles)"; !strings.Contains(h.Contents.Value, want) {
		t.Errorf("hover %q lacks %q", h.Contents.Value, want)
	}
	// Another block gets its own picture, drawn after a hover.
	h = c.hoverUntilDrawn(t, pictureURI, 11, 12)
	m := regexp.MustCompile(`\[tile map picture\]\((file://[^)]*doc-local-[0-9a-f]+\.png)\)`).FindStringSubmatch(h.Contents.Value)
	if m == nil {
		t.Fatalf("hover on local has no picture link: %q", h.Contents.Value)
	}
	lu, _ := url.Parse(m[1])
	if _, err := os.Stat(lu.Path); err != nil {
		t.Errorf("the hover's picture was not written: %v", err)
	}
	// A table the editor cannot fill: no picture, and the command to run.
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(pictureURI, 15, 12)}, &h)
	if !strings.Contains(h.Contents.Value, "tile map picture: none (the mask reads buffer table: draw it with `maskc draw") {
		t.Errorf("hover on tabled: %q", h.Contents.Value)
	}
	if err := c.call(protocol.MethodWorkspaceExecuteCommand, &protocol.ExecuteCommandParams{Command: drawCommand, Arguments: []any{string(pictureURI), "nope"}}, &link); err == nil {
		t.Error("the draw command on a missing block did not fail")
	}
}

// TestPicturesOff checks that without a pictures directory there are no
// draw lenses, no command and no link.
func TestPicturesOff(t *testing.T) {
	c := startServer(t)
	if init := c.initialize(); init.Capabilities.ExecuteCommandProvider != nil {
		t.Errorf("executeCommandProvider without pictures: %+v", init.Capabilities.ExecuteCommandProvider)
	}
	c.open(pictureURI, pictureText)
	var lenses []protocol.CodeLens
	c.mustCall(protocol.MethodTextDocumentCodeLens, &protocol.CodeLensParams{TextDocument: textDoc(pictureURI)}, &lenses)
	for _, l := range lenses {
		if l.Command != nil && l.Command.Command != "" {
			t.Errorf("lens with a command without pictures: %+v", l)
		}
	}
	var h protocol.Hover
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(pictureURI, 7, 12)}, &h)
	if strings.Contains(h.Contents.Value, "picture") {
		t.Errorf("hover mentions a picture without pictures: %q", h.Contents.Value)
	}
}

// hoverUntilDrawn hovers at (line, char) until the hover no longer says
// that the picture is being drawn.
func (c *testClient) hoverUntilDrawn(t *testing.T, uri protocol.DocumentURI, line, char uint32) protocol.Hover {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		var h protocol.Hover
		c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(uri, line, char)}, &h)
		if !strings.Contains(h.Contents.Value, "being drawn") {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the picture is still being drawn: %q", uri, h.Contents.Value)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPictureOffTheRequestPath: a block whose picture takes long to draw
// does not hold the hover or the requests after it, and once drawn, a new
// version of the text replaces the block's older picture (issue 31: a
// mask of 2,000 `or` terms held the hover 42.7 s, semantic tokens with it,
// and every hovered text version left a PNG behind).
func TestPictureOffTheRequestPath(t *testing.T) {
	dir := t.TempDir()
	c := startServerWith(t, Options{PicturesDir: dir})
	c.initialize()
	slow := func(n, off int) string {
		var terms []string
		for i := 0; i < n; i++ {
			terms = append(terms, fmt.Sprintf("(q - kv == %d)", i*7+off))
		}
		return "mask m(b, h, q, kv) = " + strings.Join(terms, " or ") + "\nattention slow {\n    mask = m\n}\n"
	}
	const uri = protocol.DocumentURI("file:///work/slow.flex")
	c.open(uri, slow(2000, 0))
	t0 := time.Now()
	var h protocol.Hover
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(uri, 1, 12)}, &h)
	var toks protocol.SemanticTokens
	c.mustCall(protocol.MethodSemanticTokensFull, &protocol.SemanticTokensParams{TextDocument: textDoc(uri)}, &toks)
	if el := time.Since(t0); el > 3*time.Second {
		t.Errorf("hover and semantic tokens took %v while the picture was drawn", el)
	}
	if !strings.Contains(h.Contents.Value, "tile map picture: being drawn (B=1 H=1 S=2048, amd tiles); hover again for its link") {
		t.Errorf("first hover: %q", h.Contents.Value)
	}
	if len(toks.Data) == 0 {
		t.Error("no semantic tokens")
	}

	// A new text of the block stops the long drawing: the block's next
	// picture does not wait for it.
	c.change(uri, 2, slow(3, 5))
	c.hoverUntilDrawn(t, uri, 1, 12)

	// Small versions, drawn one after the other: one picture remains.
	const small = protocol.DocumentURI("file:///work/small.flex")
	c.open(small, slow(3, 0))
	c.hoverUntilDrawn(t, small, 1, 12)
	c.change(small, 2, slow(3, 1))
	h = c.hoverUntilDrawn(t, small, 1, 12)
	if !strings.Contains(h.Contents.Value, "[tile map picture](") {
		t.Fatalf("hover after the edit: %q", h.Contents.Value)
	}
	pics, _ := filepath.Glob(filepath.Join(dir, "small-slow-*.png"))
	if len(pics) != 1 {
		t.Errorf("pictures of the block after two versions: %v, want one", pics)
	}
}
