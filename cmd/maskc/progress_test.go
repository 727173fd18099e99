package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestProgressQuietOffTerminal checks that progress writes nothing when
// stderr is not a terminal, and rewrites one line, cleared at the end, when
// it is.
func TestProgressQuietOffTerminal(t *testing.T) {
	var quiet bytes.Buffer
	p := newProgress(&env{stderr: &quiet}, "compile")
	for i := 1; i <= 3; i++ {
		p.update(i, 3, "block")
	}
	p.done()
	if quiet.Len() != 0 {
		t.Errorf("progress wrote %q to a non-terminal", quiet.String())
	}

	saved := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	defer func() { isTerminal = saved }()
	var tty bytes.Buffer
	p = newProgress(&env{stderr: &tty}, "compile")
	p.update(1, 3, "a")
	p.update(2, 3, "b") // within progressEvery of the first: dropped
	p.update(3, 3, "c") // the last step is always shown
	p.done()
	got := tty.String()
	for _, want := range []string{"\r\x1b[Kcompile: 1/3 a", "\r\x1b[Kcompile: 3/3 c"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "2/3") {
		t.Errorf("terminal output %q shows a step within %v of the last", got, progressEvery)
	}
	if !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("terminal output %q does not end by clearing the line", got)
	}
}
