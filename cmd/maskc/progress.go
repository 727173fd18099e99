package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progressEvery is the shortest time between two progress lines.
const progressEvery = 100 * time.Millisecond

// isTerminal reports whether w is a terminal (a character device); tests
// replace it to see what a terminal would get.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress reports how far a long-running step is on stderr when stderr
// is a terminal, rewriting one line; it writes nothing otherwise, so that
// logs and pipes stay clean. It is safe for concurrent use.
type progress struct {
	w     io.Writer // nil: quiet
	label string
	mu    sync.Mutex
	last  time.Time
	shown bool
}

// newProgress returns a progress line for label on e.stderr.
func newProgress(e *env, label string) *progress {
	p := &progress{label: label}
	if isTerminal(e.stderr) {
		p.w = e.stderr
	}
	return p
}

// update shows done of total (at most every progressEvery, and always the
// last step) with what is being done.
func (p *progress) update(done, total int, what string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); done < total && now.Sub(p.last) < progressEvery {
		return
	} else {
		p.last = now
	}
	line := fmt.Sprintf("%s: %d/%d", p.label, done, total)
	if what != "" {
		line += " " + what
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.shown = true
}

// done clears the progress line.
func (p *progress) done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
