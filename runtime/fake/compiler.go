package fake

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/maskc/maskc/runtime/backend"
)

// Compiler is the fake backend's compiler. It does not compile: it checks
// the source the way a compiler front end would report on it, so that the
// runtime's log handling is tested end to end on a CPU:
//
//   - `#line N "file"` directives redirect reported positions, as in C;
//   - each `#error message` line outside #if/#ifdef/#ifndef blocks (whose
//     conditions it does not evaluate) is reported in NVRTC's log format,
//     `file(N): error: message`;
//   - the image lists the `extern "C" __global__` entry points.
type Compiler struct {
	b *Backend
}

// imageMagic starts every fake image.
const imageMagic = "MASKC-FAKE-IMAGE\n"

var (
	lineDirective = regexp.MustCompile(`^\s*#\s*line\s+(\d+)(?:\s+"([^"]*)")?`)
	errorLine     = regexp.MustCompile(`^\s*#\s*error\s*(.*)$`)
	ifLine        = regexp.MustCompile(`^\s*#\s*if(n?def)?\b`)
	endifLine     = regexp.MustCompile(`^\s*#\s*endif\b`)
	launchBounds  = `(?:__launch_bounds__\s*\([^)]*\)\s*)?`
	entryPoint    = regexp.MustCompile(`extern\s+"C"\s+__global__\s+` + launchBounds + `void\s+` + launchBounds + `([A-Za-z_]\w*)\s*\(`)
)

// Version implements backend.Compiler.
func (Compiler) Version() string { return "fake 1" }

// BaseOptions implements backend.Compiler.
func (Compiler) BaseOptions(arch string) []string { return []string{"--arch=" + arch} }

// Compile implements backend.Compiler.
func (c Compiler) Compile(req backend.CompileRequest) (backend.Image, error) {
	if c.b != nil {
		c.b.compiles.Add(1)
	}
	name := req.Name
	if name == "" {
		name = "maskc_kernel.cu"
	}
	var log strings.Builder
	var entries []string
	file, line, depth := name, 0, 0
	sc := bufio.NewScanner(strings.NewReader(req.Source))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		line++
		text := sc.Text()
		if m := lineDirective.FindStringSubmatch(text); m != nil {
			n, err := strconv.Atoi(m[1])
			if err == nil {
				line = n - 1
				if m[2] != "" {
					file = m[2]
				}
			}
			continue
		}
		switch {
		case ifLine.MatchString(text):
			depth++
		case endifLine.MatchString(text) && depth > 0:
			depth--
		}
		if m := errorLine.FindStringSubmatch(text); m != nil && depth == 0 {
			fmt.Fprintf(&log, "%s(%d): error: %s\n", file, line, strings.TrimSpace(m[1]))
			continue
		}
	}
	if err := sc.Err(); err != nil {
		return backend.Image{}, fmt.Errorf("fake compiler: %v", err)
	}
	for _, m := range entryPoint.FindAllStringSubmatch(req.Source, -1) {
		entries = append(entries, m[1])
	}
	if log.Len() > 0 {
		fmt.Fprintf(&log, "%d errors detected in the compilation of \"%s\".\n", strings.Count(log.String(), ": error: "), name)
		return backend.Image{}, &backend.CompileError{Compiler: c.Version(), Log: log.String()}
	}
	return backend.Image{Kind: backend.ImageFake, Code: []byte(imageMagic + strings.Join(entries, "\n"))}, nil
}

// parseImage returns the entry points listed in a fake image.
func parseImage(img backend.Image) ([]string, error) {
	s := string(img.Code)
	if img.Kind != backend.ImageFake || !strings.HasPrefix(s, imageMagic) {
		return nil, fmt.Errorf("fake: cannot load a %s image", img.Kind)
	}
	s = strings.TrimPrefix(s, imageMagic)
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\n"), nil
}
