import json

import bwd_overlap_summary as s


def write(tmp_path, name, objs):
    p = tmp_path / name
    p.write_text("noise line\n" + "".join(json.dumps(o) + "\n" for o in objs))
    return str(p)


def test_kernel_lines_flag_serialized_wgmma_and_errors(tmp_path):
    p = write(tmp_path, "b.jsonl", [
        {"kind": "kernel", "variant": "main", "case": "full", "bwd_regs": 254, "bwd_local_bytes": 0, "ptxas": []},
        {"kind": "kernel", "variant": "ov", "case": "full", "bwd_regs": 255, "bwd_local_bytes": 16,
         "ptxas": ["ptxas info: Potential Performance Loss: wgmma.mma_async instructions are serialized due to ..."]},
        {"kind": "kernel", "variant": "ov", "case": "causal", "error": "CompileError('boom')"},
        {"kind": "row", "case": "full"},
    ])
    assert s.kernel_lines(p) == [
        "main full bwd regs 254 local 0",
        "ov full bwd regs 255 local 16 SERIALIZED",
        "ov causal ERROR CompileError('boom')",
    ]


def test_dense_lines_pair_runs_by_row(tmp_path):
    a = write(tmp_path, "dense.jsonl", [
        {"mask": "full", "D": 128, "S": 8192, "maskc_fwd_vs_cudnn": 0.86, "maskc_fb_vs_cudnn": 0.64},
        {"mask": "causal", "D": 64, "S": 2048, "maskc_fb_vs_cudnn": 0.68},
        {"kind": "env"},
    ])
    b = write(tmp_path, "dense-ov.jsonl", [
        {"mask": "full", "D": 128, "S": 8192, "maskc_fwd_vs_cudnn": 0.85, "maskc_fb_vs_cudnn": 0.7},
    ])
    lines = s.dense_lines([a, b])
    assert lines[0].startswith("causal D64  S2048") and "dense fwd None fb 0.68" in lines[0]
    assert lines[1] == "full   D128 S8192  dense fwd 0.86 fb 0.64 | dense-ov fwd 0.85 fb 0.7"


def test_main_usage(capsys):
    assert s.main([]) == 2
