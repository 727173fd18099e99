package hip

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/internal/sidrocm"
	"github.com/maskc/maskc/parser"
	"github.com/maskc/maskc/runtime/backend"
)

// sidChildEnv, when set in the environment, makes this test binary run
// hiprtcChild instead of its tests: TestHiprtcSid runs the binary so inside
// the sid ROCm chroot, where dlopen finds that ROCm's libhiprtc.
const sidChildEnv = "MASKC_HIPRTC_SID_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(sidChildEnv) != "" {
		if err := hiprtcChild(os.Stdout); err != nil {
			fmt.Println("FAIL:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// amdgpuMach is the code object's processor (ELF e_flags &
// EF_AMDGPU_MACH, LLVM's AMDGPUUsage) for each target built.
var amdgpuMach = map[string]uint32{"gfx90a": 0x3f, "gfx942": 0x4c, "gfx950": 0x4f}

// hiprtcChild compiles, with the runtime's device-free hiprtc path
// (NewCompiler), a generated kernel's backward source (which holds the
// forward's kernels too) for
// gfx90a, gfx942 and gfx950, and checks each result is an AMDGPU code
// object for that processor that defines the kernels' entry points; then
// that a compile error names its .flex line. It runs in the sid chroot,
// where TestHiprtcSid put the generated sources in sidrocm.WorkDir.
func hiprtcChild(w io.Writer) error {
	bwd, err := os.ReadFile(filepath.Join(sidrocm.WorkDir, "kernel.bwd.hip"))
	if err != nil {
		return err
	}
	for _, arch := range []string{"gfx90a", "gfx942", "gfx950"} {
		c, err := NewCompiler(arch)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: %s\n", arch, c.Version())
		for _, src := range []struct {
			name, text string
			entries    []string
		}{
			// The backward source holds the forward's kernels too.
			{"kernel.bwd.hip", string(bwd), append([]string{"maskc_attn_fwd", "maskc_tile_flags"}, codegen.BwdEntries...)},
		} {
			img, err := c.Compile(backend.CompileRequest{Source: src.text, Name: src.name})
			if err != nil {
				return fmt.Errorf("%s %s: %v", arch, src.name, err)
			}
			if img.Kind != backend.ImageHSACO {
				return fmt.Errorf("%s %s: a %s image", arch, src.name, img.Kind)
			}
			f, err := elf.NewFile(bytes.NewReader(img.Code))
			if err != nil {
				return fmt.Errorf("%s %s: not an ELF code object: %v", arch, src.name, err)
			}
			if f.Machine != elf.EM_AMDGPU {
				return fmt.Errorf("%s %s: machine %v", arch, src.name, f.Machine)
			}
			// e_flags, at byte 48 of an ELF64 header; its low byte is the processor.
			if f.Class != elf.ELFCLASS64 || len(img.Code) < 52 {
				return fmt.Errorf("%s %s: not an ELF64 code object", arch, src.name)
			}
			if mach := binary.LittleEndian.Uint32(img.Code[48:52]) & 0xff; mach != amdgpuMach[arch] {
				return fmt.Errorf("%s %s: code object for processor %#x, want %#x", arch, src.name, mach, amdgpuMach[arch])
			}
			syms, err := f.Symbols()
			if err != nil {
				return fmt.Errorf("%s %s: %v", arch, src.name, err)
			}
			have := map[string]bool{}
			for _, s := range syms {
				have[s.Name] = true
			}
			for _, e := range src.entries {
				if !have[e] {
					return fmt.Errorf("%s %s: no %s in the code object", arch, src.name, e)
				}
			}
			fmt.Fprintf(w, "%s %s: %d bytes\n", arch, src.name, len(img.Code))
		}
	}
	c, err := NewCompiler("gfx942")
	if err != nil {
		return err
	}
	_, err = c.Compile(backend.CompileRequest{Source: "#line 7 \"k.flex\"\nint f() { return undefined_name; }\n", Name: "bad.hip"})
	if ce, ok := err.(*backend.CompileError); !ok || !strings.Contains(ce.Log, "k.flex:7:") {
		return fmt.Errorf("want a compile error naming k.flex:7, got %v", err)
	}
	return nil
}

// TestHiprtcSid drives the runtime's hiprtc path (NewCompiler, no GPU)
// against Debian sid's ROCm (HIP 6.4), the one that targets gfx942 and
// gfx950: it writes a generated kernel's source, and runs this test binary
// inside the chroot that .ci/sid-rocm makes (internal/sidrocm), where
// hiprtcChild compiles them for gfx90a, gfx942 and gfx950.
//
// Outside CI a missing chroot skips the test; with CI=true it fails.
func TestHiprtcSid(t *testing.T) {
	root, err := sidrocm.Root()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	text, err := os.ReadFile("../../examples/prefix_lm.flex")
	if err != nil {
		t.Fatal(err)
	}
	f, diags := parser.ParseFile("prefix_lm.flex", text)
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	k, diags := codegen.Generate(p, p.Attention("prefix_layer"), codegen.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"kernel.bwd.hip": []byte(k.BwdSource), "hip.test": bin} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := sidrocm.Command(root, dir, sidrocm.WorkDir+"/hip.test")
	cmd.Env = append(os.Environ(), sidChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hiprtc in the sid chroot %s: %v\n%s", root, err, out)
	}
	t.Logf("hiprtc in the sid chroot:\n%s", out)
}
