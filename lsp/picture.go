package lsp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/draw"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/tilemap"
)

// The editor's pictures: for each attention block, the kept pairs and the
// tile map of its generated kernel (maskc draw's picture), for a default
// launch, written as PNG under the server's pictures directory and linked
// from the block's hover and code lens.

// drawCommand is the workspace/executeCommand that writes a block's
// picture and shows it; its arguments are the document URI and the block
// name.
const drawCommand = "maskc.drawTileMap"

// Default launch of the editor's pictures: one (b, h) slice of
// pictureSeq x pictureSeq pairs on AMD's tiles; `segments` buffers hold
// pictureDocs documents of equal length.
const (
	pictureSeq  = 2048
	pictureDocs = 4
)

// pictureLaunch describes the default launch for titles and hovers.
var pictureLaunch = fmt.Sprintf("B=1 H=1 S=%d, %s tiles", pictureSeq, hipsrc.AMD)

// DefaultPicturesDir is where `maskc lsp` writes pictures unless told
// otherwise: maskc/pictures under the user cache directory.
func DefaultPicturesDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "maskc", "pictures"), nil
}

// fileURL is the file:// URL of an absolute path.
func fileURL(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// picture writes (or finds, when the same text was drawn before) the
// picture of attention block d and returns its path. It fails when the
// file has errors, the block has no generated kernel, or the mask reads a
// buffer other than `segments` ones, whose values an editor cannot guess.
func (s *server) picture(a *analysis, d *dsl.AttentionDecl) (string, error) {
	if s.pictures == "" {
		return "", fmt.Errorf("pictures are off")
	}
	if a.prog == nil || a.decisions[d] == nil || d.Name == nil {
		return "", fmt.Errorf("%s", a.unclassifiedReason())
	}
	name := d.Name.Name
	attn := a.prog.Attention(name)
	if attn == nil {
		return "", fmt.Errorf("attention %s was not checked", name)
	}
	k, diags := codegen.Generate(a.prog, attn, codegen.Options{})
	if diags.HasErrors() {
		first := diags[0]
		for _, x := range diags {
			if x.Severity == dsl.SeverityError {
				first = x
				break
			}
		}
		return "", fmt.Errorf("no generated kernel: %s %s", first.Code, first.Message)
	}
	env := &eval.Env{B: 1, H: 1, HKV: 1, Q: pictureSeq, KV: pictureSeq, Buffers: map[string]*eval.Tensor{}}
	for _, kb := range k.Buffers {
		if !kb.Segments || len(kb.Dims) != 1 {
			return "", fmt.Errorf("the mask reads buffer %s: draw it with `maskc draw FILE --attention %s --shape B,H,S,D --buffer %s=...`", kb.Name, name, kb.Name)
		}
		t := eval.NewTensor(pictureSeq)
		for i := range t.Data {
			t.Data[i] = float64(i * pictureDocs / pictureSeq)
		}
		env.Buffers[kb.Name] = t
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00%s\x00%d\x00%d\x00", a.file.Source.Name, name, pictureSeq, pictureDocs)
	sum.Write(a.file.Source.Text)
	base := strings.TrimSuffix(filepath.Base(a.file.Source.Name), filepath.Ext(a.file.Source.Name))
	path := filepath.Join(s.pictures, fmt.Sprintf("%s-%s-%s.png", base, name, hex.EncodeToString(sum.Sum(nil))[:12]))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	grid, scale := draw.Grid(pictureSeq, pictureSeq, draw.MaxCells)
	m, err := tilemap.Build(k, env, tilemap.Options{Platform: hipsrc.AMD, Grid: &grid})
	if err != nil {
		return "", err
	}
	title := fmt.Sprintf("%s: attention %s, %s", filepath.Base(a.file.Source.Name), name, pictureLaunch)
	if len(k.Buffers) > 0 {
		title += fmt.Sprintf(", %d equal documents", pictureDocs)
	}
	c, err := draw.Layout(draw.Picture{Map: m, Scale: scale, Title: title})
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := c.PNG(&buf); err != nil {
		return "", err
	}
	if err := os.MkdirAll(s.pictures, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(s.pictures, ".picture-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(buf.Bytes())
	cerr := tmp.Close()
	if werr == nil && cerr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("writing %s: %v", path, firstErr(werr, cerr))
	}
	return path, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// pictureHover is the hover's last paragraph for attention block d: a
// link to its picture, or why there is none; "" when pictures are off.
func (s *server) pictureHover(a *analysis, d *dsl.AttentionDecl) string {
	if s.pictures == "" {
		return ""
	}
	path, err := s.picture(a, d)
	if err != nil {
		return "\n\ntile map picture: none (" + err.Error() + ")"
	}
	return fmt.Sprintf("\n\n[tile map picture](%s) (%s)", fileURL(path), pictureLaunch)
}

// executeCommand answers workspace/executeCommand for drawCommand: it
// writes the block's picture, asks the client to show it (window/
// showDocument when the client has it, else a window/showMessage with the
// link), and returns the picture's file:// URL.
func (s *server) executeCommand(ctx context.Context, p *protocol.ExecuteCommandParams) (any, error) {
	if p.Command != drawCommand || s.pictures == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "unknown command %q", p.Command)
	}
	var uri, name string
	if len(p.Arguments) == 2 {
		uri, _ = p.Arguments[0].(string)
		name, _ = p.Arguments[1].(string)
	}
	if uri == "" || name == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s takes a document URI and an attention name", drawCommand)
	}
	a, err := s.analysisOf(protocol.DocumentURI(uri))
	if err != nil {
		return nil, err
	}
	var decl *dsl.AttentionDecl
	for _, d := range a.file.Decls {
		if at, ok := d.(*dsl.AttentionDecl); ok && at.Name != nil && at.Name.Name == name {
			decl = at
		}
	}
	if decl == nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "no attention block %s in %s", name, uri)
	}
	path, err := s.picture(a, decl)
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "picture of %s: %v", name, err)
	}
	link := fileURL(path)
	if s.showDocument {
		go func() {
			var res any
			_, _ = s.conn.Call(context.Background(), "window/showDocument", &protocol.ShowDocumentParams{URI: protocol.URI(link), External: true}, &res)
		}()
	} else {
		msg := &protocol.ShowMessageParams{Type: protocol.MessageTypeInfo, Message: fmt.Sprintf("attention %s: tile map picture %s", name, link)}
		_ = s.conn.Notify(ctx, protocol.MethodWindowShowMessage, msg)
	}
	return link, nil
}
