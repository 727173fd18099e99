package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// runCompile implements `maskc compile FILE -o DIR`: DIR/plan.json (the
// file a trainer reads), DIR/manifest.json (the kernels' ABI and launch,
// hipsrc/MANIFEST.md) and, for every attention block that needs a
// generated kernel (its pattern, or its fallback when a precondition fails),
// DIR/<name>.hip and its backward DIR/<name>.bwd.hip; with --offload-arch,
// also the AMD code objects of both built with hipcc. With --all-kernels
// every block gets its generated kernel, a block planned as a Turbo call
// too (for a caller that may run where Turbo is not, such as
// maskc.torch.flex_attention on an NVIDIA GPU).
func runCompile(e *env, args []string) int {
	fs := newFlagSet(e, "compile", "FILE -o DIR [--target T] [--offload-arch gfx90a,gfx940] [--all-kernels] [-D NAME=VALUE]...")
	outDir := fs.String("o", "", "output directory (created if missing)")
	all := fs.Bool("all-kernels", false, "also write the generated kernel of blocks planned as a Turbo call")
	archs := fs.String("offload-arch", "", "comma-separated AMD architectures to build code objects for with hipcc")
	target, defines := targetFlag(fs), defineFlag(fs)
	stdinNameFlag(e, fs)
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
	_, du, status := buildPlan(e, files[0], *target, defines)
	if du == nil {
		return status
	}
	plan := du.Plan
	if len(plan.Attentions) == 0 {
		// A file of mods only checks clean (a library), but compiling it
		// would write a plan of nothing (issue 31: silently, with
		// "attentions": null).
		fmt.Fprintf(e.stderr, "maskc: %s declares no attention block, so there is nothing to compile; add one: attention NAME { mask = ... }\n", dsl.Printable(displayName(e, files[0])))
		return exitError
	}
	// Everything is staged and put in place whole (compiler.WriteDir), so a
	// failed run leaves DIR as it was. status is set when fill fails for a
	// reason it has already reported.
	cu := du.WithKernel(codegen.Options{SourceName: displayName(e, files[0])})
	var kernels int
	status = exitOK
	fill := func(out *compiler.OutDir) error {
		pf := cu.NewPlanFile()
		manifest := hipsrc.NewManifest()
		var diags dsl.Diagnostics
		needs := func(pa *compiler.PlanAttention) bool { return *all || compiler.NeedsKernel(pa.Decision) }
		var todo int
		for _, pa := range pf.Attentions {
			if needs(pa) {
				todo++
			}
		}
		prog := newProgress(e, "compile")
		defer prog.done()
		for _, pa := range pf.Attentions {
			if !needs(pa) {
				continue
			}
			prog.update(len(manifest.Kernels), todo, pa.Name)
			k, kd := cu.Kernel(pa.Name)
			diags = append(diags, kd...)
			if kd.HasErrors() {
				continue
			}
			name := pa.Name + ".hip"
			mk, err := out.WriteKernel(k, pa.Decision, name, displayName(e, files[0]))
			if err != nil {
				return err
			}
			for _, arch := range strings.Split(*archs, ",") {
				if arch = strings.TrimSpace(arch); arch == "" {
					continue
				}
				for _, src := range []struct {
					file, obj, what string
					objs            *map[string]string
				}{
					{name, fmt.Sprintf("%s.%s.hsaco", pa.Name, arch), pa.Name, &mk.CodeObjects},
					{mk.BwdSourceFile, fmt.Sprintf("%s.bwd.%s.hsaco", pa.Name, arch), pa.Name + "'s backward", &mk.BwdCodeObjects},
				} {
					prog.update(len(manifest.Kernels), todo, "hipcc "+src.obj)
					args := append(hipsrc.HIPOptions(arch), "--genco", "-o", out.Path(src.obj), out.Path(src.file))
					cmd := exec.Command(hipcc, args...)
					if log, err := cmd.CombinedOutput(); err != nil {
						fmt.Fprintf(e.stderr, "maskc: hipcc for %s (%s) failed: %v\n%s", src.what, arch, err, log)
						status = exitError
						return errReported
					}
					if *src.objs == nil {
						*src.objs = map[string]string{}
					}
					(*src.objs)[arch] = src.obj
				}
			}
			pa.Kernel = mk.ID
			manifest.Kernels = append(manifest.Kernels, mk)
		}
		prog.done()
		diags.Sort()
		printDiags(e.stderr, diags)
		if diags.HasErrors() {
			status = exitError
			return errReported
		}
		planJSON, err := pf.JSON()
		if err == nil {
			var manifestJSON []byte
			if manifestJSON, err = manifest.Marshal(); err == nil {
				kernels = len(manifest.Kernels)
				if err := out.WriteFile(hipsrc.ManifestFile, manifestJSON); err != nil {
					return err
				}
				return out.WriteFile("plan.json", planJSON)
			}
		}
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		status = exitError
		return errReported
	}
	if err := compiler.WriteDir(*outDir, "maskc compile", fill); err != nil {
		if status != exitOK {
			return status
		}
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "wrote %s (%d attention blocks, %d generated kernels)\n", filepath.Join(*outDir, "plan.json"), len(plan.Attentions), kernels)
	return exitOK
}

// errReported stops compiler.WriteDir after a failure compile has already
// printed (its exit status is set beside it).
var errReported = errors.New("reported")
