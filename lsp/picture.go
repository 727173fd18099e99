package lsp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/compiler"
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

// pictureJob is one picture to draw off the request path.
type pictureJob struct {
	path   string                          // where it goes
	prefix string                          // the file's and block's part of path: newer jobs of one block replace older ones
	render func(ctx context.Context) error // draws and writes it
	done   []func(path string, err error)  // called when it is written (or failed)
}

// pictureDrawer draws the editor's pictures on one goroutine of its own,
// so a hover or a command never waits for a drawing (issue 31: a mask of
// 2,000 `or` terms held every request, semantic tokens too, for 42.7 s
// after each edit). A drawing of a block that a newer text of the same
// block replaces is dropped (stopped, if it has started); one drawing
// stops after pictureTimeout; after a picture is written, the older
// pictures of its block are deleted; at most maxPictureErrors failures
// are remembered.
type pictureDrawer struct {
	mu            sync.Mutex
	pending       []*pictureJob      // not yet started, oldest first
	running       string             // path being drawn, "" when idle
	runningPrefix string             // its block's prefix
	cancel        context.CancelFunc // stops the running job
	failed        map[string]error   // path: why it could not be drawn
	wake          chan struct{}
	stopped       bool          // stop was called: nothing more is drawn
	loopDone      chan struct{} // closed when loop returns
}

const maxPictureErrors = 256

// pictureTimeout bounds one drawing; a mask that takes longer is drawn
// with maskc draw, which shows its progress.
const pictureTimeout = 20 * time.Second

// state says whether path is being drawn (or waits to be) and why it
// failed, if it did.
func (d *pictureDrawer) state(path string) (busy bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running == path {
		return true, nil
	}
	for _, j := range d.pending {
		if j.path == path {
			return true, nil
		}
	}
	return false, d.failed[path]
}

// submit queues j, replacing a queued job of the same block, or joins a
// queued or running job of the same path.
func (d *pictureDrawer) submit(j *pictureJob) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	if d.wake == nil {
		d.wake = make(chan struct{}, 1)
		d.loopDone = make(chan struct{})
		d.failed = map[string]error{}
		go d.loop()
	}
	if d.running != "" && d.runningPrefix == j.prefix && d.running != j.path {
		d.cancel() // a newer text of the same block: its picture is moot
	}
	for i, q := range d.pending {
		if q.path == j.path {
			q.done = append(q.done, j.done...)
			return
		}
		if q.prefix == j.prefix {
			d.pending = append(d.pending[:i], d.pending[i+1:]...)
			j.done = append(q.done, j.done...)
			break
		}
	}
	d.pending = append(d.pending, j)
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// stop drops the queued drawings, stops the running one and returns when
// the drawer's goroutine has ended, so nothing is written after the
// server returns; later submits are ignored.
func (d *pictureDrawer) stop() {
	d.mu.Lock()
	d.stopped = true
	d.pending = nil
	if d.running != "" {
		d.cancel()
	}
	done := d.loopDone
	if d.wake != nil {
		close(d.wake)
	}
	d.mu.Unlock()
	if done != nil {
		<-done
	}
}

func (d *pictureDrawer) loop() {
	defer close(d.loopDone)
	for range d.wake {
		for {
			d.mu.Lock()
			if len(d.pending) == 0 {
				d.running = ""
				d.mu.Unlock()
				break
			}
			j := d.pending[0]
			d.pending = d.pending[1:]
			ctx, cancel := context.WithTimeout(context.Background(), pictureTimeout)
			d.running, d.runningPrefix, d.cancel = j.path, j.prefix, cancel
			d.mu.Unlock()
			err := j.render(ctx)
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("drawing took longer than %v: draw it with `maskc draw`", pictureTimeout)
			}
			cancel()
			d.mu.Lock()
			if err != nil && !errors.Is(err, context.Canceled) {
				if len(d.failed) >= maxPictureErrors {
					clear(d.failed)
				}
				d.failed[j.path] = err
			}
			d.running = ""
			d.mu.Unlock()
			for _, f := range j.done {
				f(j.path, err)
			}
		}
	}
}

// pictureJobFor checks that attention block d can be drawn and returns
// the job that draws it (the picture's path is job.path). It fails when
// the file has errors, the block has no generated kernel, or the mask
// reads a buffer other than `segments` ones, whose values an editor cannot
// guess.
func (s *server) pictureJobFor(a *analysis, d *dsl.AttentionDecl) (*pictureJob, error) {
	if s.pictures == "" {
		return nil, fmt.Errorf("pictures are off")
	}
	if a.prog == nil || a.decisions[d] == nil || d.Name == nil {
		return nil, fmt.Errorf("%s", a.unclassifiedReason())
	}
	name := d.Name.Name
	if a.prog.Attention(name) == nil || a.unit == nil {
		return nil, fmt.Errorf("attention %s was not checked", name)
	}
	k, diags := a.unit.Kernel(name)
	if diags.HasErrors() {
		first := diags[0]
		for _, x := range diags {
			if x.Severity == dsl.SeverityError {
				first = x
				break
			}
		}
		return nil, fmt.Errorf("no generated kernel: %s %s", first.Code, first.Message)
	}
	env := &eval.Env{B: 1, H: 1, HKV: 1, Q: pictureSeq, KV: pictureSeq, Buffers: map[string]*eval.Tensor{}}
	for _, kb := range k.Buffers {
		if !kb.Segments || len(kb.Dims) != 1 {
			return nil, fmt.Errorf("the mask reads buffer %s: draw it with `maskc draw FILE --attention %s --shape B,H,S,D --buffer %s=...`", kb.Name, name, kb.Name)
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
	prefix := base + "-" + name + "-"
	path := filepath.Join(s.pictures, prefix+hex.EncodeToString(sum.Sum(nil))[:pictureHashLen]+".png")
	title := fmt.Sprintf("%s: attention %s, %s", filepath.Base(a.file.Source.Name), name, pictureLaunch)
	if len(k.Buffers) > 0 {
		title += fmt.Sprintf(", %d equal documents", pictureDocs)
	}
	render := func(ctx context.Context) error {
		if err := writePicture(ctx, path, a.unit, name, env, title); err != nil {
			return err
		}
		removeOlderPictures(s.pictures, prefix, filepath.Base(path))
		return nil
	}
	return &pictureJob{path: path, prefix: prefix, render: render}, nil
}

// pictureHashLen is the hex digits of the text's hash in a picture's name.
const pictureHashLen = 12

// writePicture draws the tile map of the kernel of block name of u for env
// and writes it to path as PNG (through a temporary file and a rename).
func writePicture(ctx context.Context, path string, u *compiler.Unit, name string, env *eval.Env, title string) error {
	grid, scale := draw.Grid(pictureSeq, pictureSeq, draw.MaxCells)
	m, _, err := u.TileMap(name, env, tilemap.Options{Platform: hipsrc.AMD, Grid: &grid, Context: ctx})
	if err != nil {
		return err
	}
	c, err := draw.Layout(draw.Picture{Map: m, Scale: scale, Title: title})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := c.PNG(&buf); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".picture-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(buf.Bytes())
	cerr := tmp.Close()
	if werr == nil && cerr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %v", path, firstErr(werr, cerr))
	}
	return nil
}

// removeOlderPictures deletes the pictures of one block (prefix, then the
// hash, then .png) other than keep: one picture per block, not one per
// text version hovered.
func removeOlderPictures(dir, prefix, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || name == keep || !e.Type().IsRegular() || len(rest) != pictureHashLen+len(".png") || !strings.HasSuffix(rest, ".png") {
			continue
		}
		if _, err := hex.DecodeString(rest[:pictureHashLen]); err == nil {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// picture returns the path of block d's picture, and whether it is there
// yet: when it is not, its drawing is queued (done, if not nil, is called
// when it ends, on the drawing goroutine) and the caller answers at once.
func (s *server) picture(a *analysis, d *dsl.AttentionDecl, done func(path string, err error)) (path string, ready bool, err error) {
	j, err := s.pictureJobFor(a, d)
	if err != nil {
		return "", false, err
	}
	if busy, err := s.drawer.state(j.path); !busy && err != nil {
		return "", false, err
	}
	if _, err := os.Stat(j.path); err == nil {
		return j.path, true, nil
	}
	if done != nil {
		j.done = append(j.done, done)
	}
	s.drawer.submit(j)
	return j.path, false, nil
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
	path, ready, err := s.picture(a, d, nil)
	if err != nil {
		return "\n\ntile map picture: none (" + err.Error() + ")"
	}
	if !ready {
		return fmt.Sprintf("\n\ntile map picture: being drawn (%s); hover again for its link", pictureLaunch)
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
	show := func(link string) {
		if s.showDocument {
			var res any
			_, _ = s.conn.Call(context.Background(), "window/showDocument", &protocol.ShowDocumentParams{URI: protocol.URI(link), External: true}, &res)
			return
		}
		msg := &protocol.ShowMessageParams{Type: protocol.MessageTypeInfo, Message: fmt.Sprintf("attention %s: tile map picture %s", name, link)}
		_ = s.conn.Notify(context.Background(), protocol.MethodWindowShowMessage, msg)
	}
	// The picture is drawn off the request path; the client is shown it
	// when it is written (or told why not).
	path, ready, err := s.picture(a, decl, func(path string, err error) {
		if err != nil {
			msg := &protocol.ShowMessageParams{Type: protocol.MessageTypeError, Message: fmt.Sprintf("attention %s: no tile map picture: %v", name, err)}
			_ = s.conn.Notify(context.Background(), protocol.MethodWindowShowMessage, msg)
			return
		}
		show(fileURL(path))
	})
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "picture of %s: %v", name, err)
	}
	link := fileURL(path)
	if ready {
		go show(link)
	}
	return link, nil
}
