package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
)

// runCompile implements `maskc compile FILE -o DIR`: DIR/plan.json (the
// file a trainer reads) and, for every attention block that needs a
// generated kernel (its pattern, or its fallback when a precondition fails),
// DIR/<name>.hip; with --offload-arch, also the AMD code objects built with
// hipcc.
func runCompile(e *env, args []string) int {
	fs := newFlagSet(e, "compile", "FILE -o DIR [--target T] [--offload-arch gfx90a,gfx940] [-D NAME=VALUE]...")
	outDir := fs.String("o", "", "output directory (created if missing)")
	archs := fs.String("offload-arch", "", "comma-separated AMD architectures to build code objects for with hipcc")
	target, defines := targetFlag(fs), defineFlag(fs)
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(files) != 1 || *outDir == "" {
		return usageError(e.stderr, "compile takes one FILE and -o DIR")
	}
	var hipcc string
	if *archs != "" {
		var err error
		if hipcc, err = exec.LookPath("hipcc"); err != nil {
			return usageError(e.stderr, "--offload-arch needs hipcc on PATH (Debian: apt-get install hipcc)")
		}
	}
	u, plan, status := buildPlan(e, files[0], *target, defines)
	if plan == nil {
		return status
	}
	// Everything is written to a sibling of DIR and put in place whole, so a
	// failed run leaves DIR as it was.
	out, err := stageDir(*outDir)
	if err != nil {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return exitUsage
	}
	committed := false
	defer func() {
		if !committed {
			out.Abort()
		}
	}()
	kernels := map[string]map[string]any{}
	var diags dsl.Diagnostics
	for _, d := range plan.Attentions {
		if d.Pattern != "generated" && d.Fallback != "generated" {
			continue
		}
		a := u.prog.Attention(d.Name)
		k, kd := codegen.Generate(u.prog, a, codegen.Options{SourceName: files[0]})
		diags = append(diags, kd...)
		if kd.HasErrors() {
			continue
		}
		name := d.Name + ".hip"
		if err := out.WriteFile(name, []byte(k.Source)); err != nil {
			fmt.Fprintf(e.stderr, "maskc: %v\n", err)
			return exitUsage
		}
		info := map[string]any{
			"source": name, "entry": k.Entry, "sparsity": k.Sparsity, "sparsity_reason": k.SparsityReason,
			"head_dim": k.HeadDim, "dtype": k.DType, "layout": k.Layout, "block_m": k.BlockM, "block_n": k.BlockN,
			"launch": k.Launch, "scale": k.Scale, "buffers": bufferNames(k),
		}
		if k.FlagsEntry != "" {
			info["flags_entry"] = k.FlagsEntry
		}
		for _, arch := range strings.Split(*archs, ",") {
			if arch = strings.TrimSpace(arch); arch == "" {
				continue
			}
			obj := fmt.Sprintf("%s.%s.hsaco", d.Name, arch)
			cmd := exec.Command(hipcc, "--offload-arch="+arch, "--genco", "-O3", "-o", out.Path(obj), out.Path(name))
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(e.stderr, "maskc: hipcc for %s (%s) failed: %v\n%s", d.Name, arch, err, out)
				return exitError
			}
			objs, _ := info["code_objects"].(map[string]string)
			if objs == nil {
				objs = map[string]string{}
			}
			objs[arch] = obj
			info["code_objects"] = objs
		}
		kernels[d.Name] = info
	}
	diags.Sort()
	printDiags(e.stderr, diags)
	if diags.HasErrors() {
		return exitError
	}
	planJSON, err := planWithKernels(plan, kernels)
	if err != nil {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return exitError
	}
	if err := out.WriteFile("plan.json", planJSON); err != nil {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return exitUsage
	}
	committed = true
	if err := out.Commit(); err != nil {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "wrote %s (%d attention blocks, %d generated kernels)\n", filepath.Join(*outDir, "plan.json"), len(plan.Attentions), len(kernels))
	return exitOK
}

// bufferNames lists the captured buffers in MaskcBuffers slot order.
func bufferNames(k *codegen.Kernel) []string {
	names := make([]string, len(k.Buffers))
	for i, b := range k.Buffers {
		names[i] = b.Name
	}
	return names
}

// planWithKernels adds to each generated decision of the plan a "kernel"
// object describing the source written for it (PLAN.md documents it).
func planWithKernels(plan *classify.Plan, kernels map[string]map[string]any) ([]byte, error) {
	raw, err := plan.JSON()
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	atts, _ := doc["attentions"].([]any)
	for _, a := range atts {
		m, _ := a.(map[string]any)
		if name, _ := m["name"].(string); kernels[name] != nil {
			m["kernel"] = kernels[name]
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	return append(out, '\n'), err
}
