package compiler

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
)

// TestDescriptorReachesEveryReader pins what makes a per-kernel fact one
// edit: it is a field of hipsrc.KernelDesc, which codegen.Kernel embeds
// (codegen fills it in place), runtime.AttentionSpec carries whole (the
// spec of a generated kernel is its descriptor, nothing restated),
// manifest.json keeps field for field (a round trip loses nothing) and
// MANIFEST.md documents by JSON name; plan.json only names it. The Python
// package exposes every key of a manifest entry as a KernelSpec attribute
// (python/tests/test_abi.py, test_manifest_compile.py). So a new field is
// seen by the Go runtime and by Python with no edit beyond hipsrc
// (the field), codegen (its value) and MANIFEST.md (its meaning).
func TestDescriptorReachesEveryReader(t *testing.T) {
	desc := reflect.TypeFor[hipsrc.KernelDesc]()
	if f, ok := reflect.TypeFor[codegen.Kernel]().FieldByName("KernelDesc"); !ok || !f.Anonymous || f.Type != desc {
		t.Errorf("codegen.Kernel does not embed hipsrc.KernelDesc: %+v", f)
	}
	if f, ok := reflect.TypeFor[runtime.AttentionSpec]().FieldByName("Kernel"); !ok || f.Type != desc {
		t.Errorf("runtime.AttentionSpec does not carry hipsrc.KernelDesc: %+v", f)
	}
	if f, ok := reflect.TypeFor[PlanAttention]().FieldByName("Kernel"); !ok || f.Type.Kind() != reflect.String {
		t.Errorf("plan.json's kernel is not a name: %+v", f)
	}
	doc, err := os.ReadFile("../hipsrc/MANIFEST.md")
	if err != nil {
		t.Fatal(err)
	}
	// The names in the first column of the table under "## `kernels[]`".
	section := string(doc)[strings.Index(string(doc), "## `kernels[]`"):]
	documented := map[string]bool{}
	inTable := false
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z_0-9]+)`").FindAllStringSubmatch(first, -1) {
			documented[m[1]] = true
		}
	}
	for i := range desc.NumField() {
		name, _, _ := strings.Cut(desc.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Errorf("KernelDesc.%s is not serialised", desc.Field(i).Name)
		} else if !documented[name] {
			t.Errorf("KernelDesc.%s (%q) is not in MANIFEST.md's kernels[] table", desc.Field(i).Name, name)
		}
	}

	// A real descriptor, every field the writer sets included, survives the
	// manifest and is the runtime spec's.
	u, diags, err := CompileFile(examples+"relative_bias.flex", Options{})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	name := u.Names()[0]
	k, kd := u.Kernel(name)
	if kd.HasErrors() {
		t.Fatal(kd)
	}
	d := KernelDesc(k, u.Decision(name), name+".cu", "relative_bias.flex")
	d.CodeObjects, d.BwdCodeObjects = map[string]string{"gfx90a": "x.hsaco"}, map[string]string{"gfx90a": "x.bwd.hsaco"}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back hipsrc.KernelDesc
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, d) {
		t.Errorf("manifest round trip changed the descriptor:\n%+v\n%+v", back, d)
	}
	// zero for this block: no fallback, sink, pre-pass, segments or kv_heads;
	// the mask (causal) reads neither b nor h
	zero := map[string]bool{"Fallback": true, "Sink": true, "HasSink": true, "FlagsEntry": true, "SegCheckEntry": true,
		"KVHeads": true, "MaskUsesB": true, "MaskUsesH": true}
	for i := range desc.NumField() {
		if reflect.ValueOf(d).Field(i).IsZero() != zero[desc.Field(i).Name] {
			t.Errorf("KernelDesc.%s of %s is %v", desc.Field(i).Name, name, reflect.ValueOf(d).Field(i))
		}
	}
	spec, err := KernelSpec(u.Program, k, "cuda", "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	d.Flex, d.Pattern, d.CodeObjects, d.BwdCodeObjects = "", "", nil, nil // the plan's and the writer's
	if !reflect.DeepEqual(spec.Kernel, d) {
		t.Errorf("the runtime spec's descriptor differs from codegen's:\n%+v\n%+v", spec.Kernel, d)
	}
}

// TestSlotExtentsAreTheDeclarations: the runtime evaluates a buffer's
// extents from the descriptor's dims text (hipsrc.EvalDims, as Python
// does); over every buffer of the examples, the ported corpus and the
// golden files they are the checked declarations' extents.
func TestSlotExtentsAreTheDeclarations(t *testing.T) {
	var files []string
	for _, pattern := range []string{examples + "*.flex", "../testdata/ported/*.flex", "../codegen/testdata/golden/*.flex"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sizes := []runtime.Sizes{{B: 1, H: 1, HKV: 1, Q: 1, KV: 1}, {B: 3, H: 16, HKV: 4, Q: 1000, KV: 4096}}
	checked := 0
	for _, f := range files {
		u, diags, err := CompileFile(f, Options{})
		if err != nil || diags.HasErrors() {
			continue // files that are refused (the corpus holds a few) have no kernel
		}
		decls := map[string]*check.Buffer{}
		for _, b := range u.Program.Buffers {
			decls[b.Name] = b
		}
		for _, name := range u.Names() {
			k, kd := u.Kernel(name)
			if kd.HasErrors() {
				continue
			}
			for _, slot := range k.Slots {
				b := decls[slot.Name]
				for _, sz := range sizes {
					got, err := hipsrc.EvalDims(slot.Dims, map[string]int64{"B": sz.B, "H": sz.H, "HKV": sz.HKV, "Q": sz.Q, "KV": sz.KV})
					if err != nil || len(got) != len(b.Dims) {
						t.Errorf("%s: buffer %s: %v, %v", f, b.Name, got, err)
						continue
					}
					vars := map[dsl.Var]int64{dsl.SizeB: sz.B, dsl.SizeH: sz.H, dsl.SizeHKV: sz.HKV, dsl.SizeQ: sz.Q, dsl.SizeKV: sz.KV}
					for i, d := range b.Dims {
						if got[i] != d.Eval(vars) {
							t.Errorf("%s: buffer %s extent %d (%s) at %+v: text gives %d, the declaration %d", f, b.Name, i, slot.Dims[i], sz, got[i], d.Eval(vars))
						}
					}
					checked++
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d buffer extents checked", checked)
	}
}
