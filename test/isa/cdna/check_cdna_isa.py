#!/usr/bin/env python3
"""Checks the CDNA kernels of one `clang -S` output against what each variant claims.

Usage:
  check_cdna_isa.py --asm FILE.s --arch gfx942|gfx950 --lds-budget BYTES
                    --kernel NAME[/ELEMENT/LAYOUT]=VARIANT[/ELEMENT/LAYOUT] [--kernel ...]
                    [--expect-fail CHECK] [--report FILE]

VARIANT is v1, v2, v3, v4 (V4 with the reference gate: its epilogue must hold an
f32 fma) or v4-op (V4's structure with any epilogue operation). NAME plus the
problem (ELEMENT fp16 or bf16, LAYOUT of B row or col; default fp16/row, the
mangled Problem<T, Layout> of the bound policy; or LAYOUT stacked / interleaved:
the gated projection, GatedProblem<T, GateLayout>, whose B is W, n x k; or LAYOUT
bwd-stacked / bwd-interleaved: the gated backward, GatedBackwardProblem<T, GateLayout>,
whose B is W_down, k x n, row-major, and whose P has that column order; or LAYOUT
xbwd-row / xbwd-col: addmm_glu's backward, AddmmGluBackwardProblem<T, Layout>; or LAYOUT
pbwd-stacked / pbwd-interleaved: the gated projection's backward,
GatedProjectionBackwardProblem<T, GateLayout>, whose B is W as the gated projection's; or
LAYOUT fp8-col / fp8-stacked / fp8-interleaved / fp8-stacked-max: the scaled (e4m3) forms,
Scaled<Problem<T, col_major>> and Scaled<GatedProblem<T, GateLayout>> with the chip's e4m3
type (gfx942: float8_e4m3fnuz_t, gfx950: float8_e4m3_t), -max with the output's row maxima; or
LAYOUT grouped-stacked / grouped-interleaved: the experts' gated projection, A gathered; or
LAYOUT grouped-fp8-col / -stacked / -interleaved / -stacked-max: the experts' e4m3 kernels, the
fp8 forms inside GroupedProblem<...>) must
name exactly one kernel symbol of the file; where it names one per chip (a default's
dispatch instantiates both chips' kernels), the one naming --arch. A problem after
VARIANT judges the kernel as that problem instead of its own (the negative tests).
Checks (names as printed):

  mfma          the chip's MFMA for the element type is present and no other MFMA is
                (gfx942: v_mfma_f32_16x16x16_f16 / v_mfma_f32_16x16x16_bf16,
                gfx950: v_mfma_f32_16x16x32_f16 / v_mfma_f32_16x16x32_bf16; the fp8
                layouts, both chips: v_mfma_f32_16x16x32_fp8_fp8, the operands e4m3)
  bread         the B-fragment reads of the layout: row-major B on gfx950 uses
                ds_read_b64_tr_b16, on gfx942 2-byte ds_read_u16*; col_major B (and
                the gated projection's W) is read like A (8-byte reads) and uses neither
  cvt           bf16: no fp16 conversion (v_cvt_f16_f32, v_cvt_f32_f16, v_cvt_pkrtz,
                v_fma_mix*, v_mad_mix*) and, on gfx950, v_cvt_pk_bf16_f32 for the
                output; fp16: no v_cvt_pk_bf16_f32 (v_cvt_pk_f16_f32 counts as fp16)
  dma           V1: no direct-to-LDS load; V2-V4: direct-to-LDS loads present
  dma16         gfx950, V2-V4: every direct-to-LDS load is the 16-byte form
                (buffer_load_dwordx4 ... lds / global_load_lds_dwordx4)
  setprio       V2-V4: s_setprio present
  loop          the innermost loop holding MFMAs exists (natural loops of the control-flow
                graph built from labels and branches: back edges to a dominating block);
                V2-V4: it issues direct-to-LDS loads, s_barrier and s_setprio, and
                moves no SGPR through VGPR lanes (no spill traffic)
  vmcnt         V3/V4: that loop waits with vmcnt(N) for some N > 0 and never with
                vmcnt(0); V2: it waits on vmcnt (a full drain is allowed)
  fma           v4: an f32 fma (v_fma_f32 / v_pk_fma_f32 / v_fmac_f32, not a
                division helper with a literal) between the loop and the last store,
                or in a basic block that holds a store (an epilogue without branches,
                which the compiler may lay out before the loop: addmm_glu's backward)
  scratch       private segment 0 (metadata and .amdhsa directive), no scratch
                instructions, no VGPR spills
  lds           group segment <= --lds-budget
  calls         no calls (everything inlined; nothing from the device libraries)
  m0            every M0 write is the direct-to-LDS sequence (s_mov_b32 m0 directly
                followed by a `... lds` load), and nothing else reads M0
  noy           gated projection (judged stacked / interleaved, or their fp8 forms): Y is not
                read -- fewer register buffer loads (buffer_load_* without lds: the bias and
                Y vectors) than the same policy's addmm_glu kernel of the same element in
                the file (fp8-col for an fp8 kernel if present, B col, else row), and, V2-V4,
                no streaming (sc0 nt)
                register load: Y is the only operand those policies read streaming
  dgated        gated backward (judged bwd-stacked / bwd-interleaved): P's G and U are
                read (8-byte register buffer loads), dP and H written with 8-byte stores
                through at least two buffer resources (dP, H), and no 2-byte store (a
                lane's 4-column block never crosses n, a multiple of 8)
  xbackward     addmm_glu's backward (judged xbwd-row / xbwd-col): the gradient and Y are
                read with 8-byte register buffer loads through at least two buffer
                resources; dX and dY written with 8-byte stores, as many through one
                buffer resource as through another and none through a third (one dX and
                one dY vector per block; the gated backward writes two dP vectors per H
                vector); no 2-byte store (n is a multiple of 8)
  colsum        addmm_glu's backward with the bias gradient (xbwd-row-sum / xbwd-col-sum):
                dX's 16-row column sums written into the partials with global stores (the
                reduction's fixed order needs no atomic); without it (xbwd-row /
                xbwd-col), no global store; neither has global_atomic_add_f32
  rowmax        the compositions of test/common/compositions.hpp (scaled-col, scaled-stacked:
                broadcast vectors, the output's row maxima) and fp8-stacked-max:
                global_atomic_umax; every other kernel: none
  pbackward     the gated projection's backward (judged pbwd-stacked / pbwd-interleaved):
                every store is 8-byte (no 2-byte store: n is a multiple of 8), and each
                basic block that holds stores holds exactly two per 8-byte register load
                (dG and dU per dO vector: the epilogue has no branch); the gated projection
                (its stores in a branch of their own, 2-byte ones on the ragged edge), the
                gated backward (3 stores per 2 loads) and addmm_glu's backward (1 per 1) fail

With --expect-fail CHECK the script succeeds only if CHECK fails for every
kernel given (the negative tests that show a check can fail).
"""
import argparse
import re
import sys

MFMA = {("gfx942", "fp16"): "v_mfma_f32_16x16x16_f16", ("gfx942", "bf16"): "v_mfma_f32_16x16x16_bf16",
        ("gfx950", "fp16"): "v_mfma_f32_16x16x32_f16", ("gfx950", "bf16"): "v_mfma_f32_16x16x32_bf16"}
# Other spellings of the same instruction an assembler may print.
MFMA_ALIASES = {"v_mfma_f32_16x16x16_bf16": {"v_mfma_f32_16x16x16bf16_1k"}}
MFMA_FP8 = "v_mfma_f32_16x16x32_fp8_fp8"
ARCHS = sorted({a for a, _ in MFMA})
# The mangled problem of a bound policy: its template's name (with the length prefix, so that
# Problem does not match inside GatedProblem), the element, then the layout argument.
PROBLEM_ELEMENT = {"fp16": "IDF16_", "bf16": "INS_10bfloat16_tE"}
# LAYOUT -> (problem template, its mangled layout argument)
PROBLEMS = {"row": ("Problem", "LNS_6LayoutE0E"), "col": ("Problem", "LNS_6LayoutE1E"),
            "stacked": ("GatedProblem", "LNS_10GateLayoutE0E"),
            "interleaved": ("GatedProblem", "LNS_10GateLayoutE1E"),
            "bwd-stacked": ("GatedBackwardProblem", "LNS_10GateLayoutE0E"),
            "bwd-interleaved": ("GatedBackwardProblem", "LNS_10GateLayoutE1E"),
            "xbwd-row": ("AddmmGluBackwardProblem", "LNS_6LayoutE0ELb0E"),
            "xbwd-col": ("AddmmGluBackwardProblem", "LNS_6LayoutE1ELb0E"),
            "xbwd-row-sum": ("AddmmGluBackwardProblem", "LNS_6LayoutE0ELb1E"),
            "xbwd-col-sum": ("AddmmGluBackwardProblem", "LNS_6LayoutE1ELb1E"),
            "pbwd-stacked": ("GatedProjectionBackwardProblem", "LNS_10GateLayoutE0E"),
            "pbwd-interleaved": ("GatedProjectionBackwardProblem", "LNS_10GateLayoutE1E"),
            "scaled-col": ("ScaledProblem", "LNS_6LayoutE1E"),
            "scaled-stacked": ("ScaledGatedProblem", "LNS_10GateLayoutE0E"),
            "grouped-stacked": ("GroupedGatedProblem", "LNS_10GateLayoutE0E"),
            "grouped-interleaved": ("GroupedGatedProblem", "LNS_10GateLayoutE1E")}
# The scaled (e4m3) forms: LAYOUT -> (the base problem's layout, RowMaxOut), and the chip's
# mangled e4m3 type.
FP8 = {"fp8-col": ("col", 0), "fp8-stacked": ("stacked", 0), "fp8-interleaved": ("interleaved", 0),
       "fp8-stacked-max": ("stacked", 1)}
FP8_TYPE = {"gfx942": "17float8_e4m3fnuz_t", "gfx950": "13float8_e4m3_t"}
# The experts' e4m3 kernels (kernels/cdna/grouped_kernel.hpp): a scaled problem inside
# GroupedProblem<...>, A the routed rows in order; checked as the dense e4m3 forms but noy (their
# policies have no addmm_glu kernel to compare with).
GROUPED_FP8 = {"grouped-" + layout: FP8[layout] for layout in ("fp8-col", "fp8-stacked", "fp8-interleaved",
                                                               "fp8-stacked-max")}
PROBLEMS.update({layout: PROBLEMS[base] for layout, (base, _) in FP8.items()})
GATED = {"stacked", "interleaved"}
FP8_GATED = {layout for layout, (base, _) in FP8.items() if base in GATED}
FP8.update(GROUPED_FP8)
PROBLEMS.update({layout: PROBLEMS[base] for layout, (base, _) in GROUPED_FP8.items()})
BACKWARD = {"bwd-stacked", "bwd-interleaved"}
XBACKWARD = {"xbwd-row", "xbwd-col", "xbwd-row-sum", "xbwd-col-sum"}
XSUM = {"xbwd-row-sum", "xbwd-col-sum"}  # with the bias gradient's column sums
PBACKWARD = {"pbwd-stacked", "pbwd-interleaved"}
GROUPED = {"grouped-stacked", "grouped-interleaved"}  # the experts' gated projection, A gathered
# test/common/compositions.hpp: broadcast vectors and the output's row maxima
SCALED = {"scaled-col", "scaled-stacked"}
# B read like A (8-byte reads): col_major B, the gated projection's W (also in its backward),
# addmm_glu's backward's col_major B.
K_MAJOR_B = {"col", "xbwd-col", "xbwd-col-sum"} | GATED | PBACKWARD | SCALED | set(FP8) | GROUPED
ROWMAX = SCALED | {"fp8-stacked-max", "grouped-fp8-stacked-max"}  # kernels that merge the output's row maxima
CHECKS = ["mfma", "bread", "cvt", "dma", "dma16", "setprio", "loop", "vmcnt", "fma", "scratch", "lds",
          "calls", "m0", "noy", "dgated", "xbackward",
          "pbackward", "colsum", "rowmax"]


def problem_symbol(element, layout):
    template, argument = PROBLEMS[layout]
    return f"{len(template)}{template}{PROBLEM_ELEMENT[element]}{argument}"


def kernels_named(kernels, name_sub, element, layout, arch):
    """The kernel symbols of policy name_sub bound to the problem; of several, those of arch.
    A scaled problem is its base problem inside Scaled<..., RowMaxOut, the chip's e4m3 type>;
    the other layouts name only unscaled kernels."""
    if layout in FP8:
        base, rowmax = FP8[layout]
        parts = ["6ScaledINS_" + problem_symbol(element, base), f"EELb{rowmax}ENS_{FP8_TYPE[arch]}E"]
    else:
        parts = [problem_symbol(element, layout)]
    grouped = "14GroupedProblemINS_6ScaledI"  # an e4m3 problem of the experts
    names = [n for n in kernels
             if name_sub in n and all(p in n for p in parts) and (layout in FP8 or "6ScaledI" not in n)
             and (grouped in n) == (layout in GROUPED_FP8)]
    if len(names) > 1:
        names = [n for n in names if f"6{arch}E" in n]
    return names
TR_READ = re.compile(r"^\s*ds_read_b64_tr_b16\b")
U16_READ = re.compile(r"^\s*ds_read_u16\w*\b")
ENC = r"(?:_e32|_e64|_sdwa|_dpp)?\b"  # encoding suffixes the assembler may print
F16_CVT = re.compile(r"^\s*v_(?:cvt_f16_f32|cvt_f32_f16|cvt_pkrtz_f16_f32|cvt_pk_f16_f32|fma_mix\w*|mad_mix\w*)" + ENC)
BF16_CVT = re.compile(r"^\s*v_cvt_pk_bf16_f32" + ENC)

LABEL = re.compile(r"^(\.LBB\d+_\d+):")
BRANCH = re.compile(r"^\s*s_(?:cbranch_\w+|branch)\s+(\.LBB\d+_\d+)")
DMA = re.compile(r"^\s*(?:(?:buffer|global)_load_\w+\s.*\blds\b|global_load_lds_\w+)")
DMA16 = re.compile(r"^\s*(?:buffer_load_dwordx4\s.*\blds\b|global_load_lds_dwordx4\b)")
VMCNT = re.compile(r"^\s*s_waitcnt\b.*\bvmcnt\((\d+)\)")
FMA = re.compile(r"^\s*v_(?:pk_fma_f32|fma_f32|fmac_f32)\b")
STORE = re.compile(r"^\s*(?:buffer|global|flat)_store_\w+")
ATOMIC_ADD_F32 = re.compile(r"^\s*global_atomic_add_f32\b")
GLOBAL_STORE = re.compile(r"^\s*global_store_\w+")
ATOMIC_UMAX = re.compile(r"^\s*global_atomic_umax\b")
SCRATCH = re.compile(r"^\s*scratch_\w+|^\s*buffer_\w+\s.*s\[0:3\]")
CALL = re.compile(r"^\s*s_(?:swappc_b64|setpc_b64|call_b64)\b")
REG_LOAD = re.compile(r"^\s*buffer_load_\w+\s")  # a register load unless it ends in lds
STREAMING = re.compile(r"\bsc0\b.*\bnt\b")
LOAD_B64 = re.compile(r"^\s*buffer_load_dwordx2\s")
STORE_B64 = re.compile(r"^\s*buffer_store_dwordx2\s.*?(s\[\d+:\d+\])")
LOAD_RSRC = re.compile(r"(s\[\d+:\d+\])")
STORE_B16 = re.compile(r"^\s*buffer_store_(?:short|b16)\w*\s")


def register_loads(code):
    """The buffer loads into registers (bias, Y): buffer_load_* that are not direct-to-LDS."""
    return [l for l in code if REG_LOAD.match(l) and not DMA.match(l)]


def instructions(body):
    """Lines of a function body without comments, directives or blank lines (labels kept)."""
    out = []
    for line in body:
        code = line.split(";", 1)[0].rstrip()
        if not code.strip():
            continue
        if code.strip().startswith(".") and not LABEL.match(code):
            continue
        out.append(code)
    return out


def parse(path):
    text = open(path).read().splitlines()
    kernels = {}
    # function bodies: "<sym>:" up to ".Lfunc_endN:"
    cur = None
    for line in text:
        m = re.match(r"^(_Z\w+):", line)
        if m and cur is None:
            cur = m.group(1)
            kernels[cur] = {"body": [], "meta": {}, "amdhsa": {}}
            continue
        if cur is not None:
            if line.startswith(".Lfunc_end"):
                cur = None
            else:
                kernels[cur]["body"].append(line)
    # .amdhsa_kernel blocks
    cur = None
    for line in text:
        m = re.match(r"^\s*\.amdhsa_kernel\s+(\S+)", line)
        if m:
            cur = m.group(1)
            continue
        if cur is not None:
            if ".end_amdhsa_kernel" in line:
                cur = None
                continue
            m = re.match(r"^\s*\.(amdhsa_\w+)\s+(\S+)", line)
            if m and cur in kernels:
                kernels[cur]["amdhsa"][m.group(1)] = m.group(2)
    # amdgpu_metadata YAML: one "- .args" entry per kernel; key/value lines until the next entry
    in_meta = False
    entry = {}
    entries = []
    for line in text:
        if re.match(r"^\s*\.amdgpu_metadata", line):
            in_meta = True
            continue
        if re.match(r"^\s*\.end_amdgpu_metadata", line):
            in_meta = False
            if entry:
                entries.append(entry)
            continue
        if not in_meta:
            continue
        m = re.match(r"^  - \.(\w+):\s*(.*)$", line)
        if m:
            if entry:
                entries.append(entry)
            entry = {m.group(1): m.group(2).strip()}
            continue
        m = re.match(r"^    \.(\w+):\s*(.*)$", line)
        if m and entry is not None:
            entry[m.group(1)] = m.group(2).strip()
    for e in entries:
        name = e.get("name")
        if name in kernels:
            kernels[name]["meta"] = e
    return kernels


def basic_blocks(code):
    """Splits code into basic blocks: [(first, last) line index], and successor lists."""
    starts = {0}
    for i, line in enumerate(code):
        if LABEL.match(line):
            starts.add(i)
        elif BRANCH.match(line) or re.match(r"^\s*s_endpgm\b", line):
            starts.add(i + 1)
    starts = sorted(s for s in starts if s < len(code))
    blocks = [(s, (starts[j + 1] if j + 1 < len(starts) else len(code)) - 1) for j, s in enumerate(starts)]
    label_block = {}
    for b, (s, _) in enumerate(blocks):
        m = LABEL.match(code[s])
        if m:
            label_block[m.group(1)] = b
    succ = []
    for b, (s, e) in enumerate(blocks):
        last = code[e].strip()
        out = []
        m = BRANCH.match(code[e])
        if m and m.group(1) in label_block:
            out.append(label_block[m.group(1)])
        falls = not (last.startswith("s_branch ") or last.startswith("s_endpgm")
                     or last.startswith("s_setpc_b64"))
        if falls and b + 1 < len(blocks):
            out.append(b + 1)
        succ.append(out)
    return blocks, succ


def natural_loops(blocks, succ):
    """{header block: set of blocks} from the back edges (u -> h with h dominating u)."""
    n = len(blocks)
    pred = [[] for _ in range(n)]
    for u in range(n):
        for v in succ[u]:
            pred[v].append(u)
    everything = set(range(n))
    dom = [everything.copy() for _ in range(n)]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for b in range(1, n):
            ps = [dom[p] for p in pred[b]]
            new = (set.intersection(*ps) if ps else set()) | {b}
            if new != dom[b]:
                dom[b] = new
                changed = True
    loops = {}
    for u in range(n):
        for h in succ[u]:
            if h in dom[u]:  # back edge u -> h
                body = loops.setdefault(h, {h})
                stack = [u]
                while stack:
                    x = stack.pop()
                    if x not in body:
                        body.add(x)
                        stack.extend(pred[x])
    return loops


def innermost_mfma_loops(code, is_mfma):
    """Line lists (in textual order) of the innermost natural loops holding an MFMA."""
    blocks, succ = basic_blocks(code)
    loops = natural_loops(blocks, succ)

    def has_mfma(body):
        return any(is_mfma(l) for b in body for l in code[blocks[b][0]:blocks[b][1] + 1])

    with_mfma = {h: body for h, body in loops.items() if has_mfma(body)}
    inner = [h for h, body in with_mfma.items()
             if not any(h2 != h and body2 < body for h2, body2 in with_mfma.items())]
    out = []
    for h in sorted(inner):
        lines = [l for b in sorted(with_mfma[h]) for l in code[blocks[b][0]:blocks[b][1] + 1]]
        last = max(blocks[b][1] for b in with_mfma[h])
        out.append((code[blocks[h][0]].rstrip(":") if LABEL.match(code[blocks[h][0]]) else f"block{h}",
                    lines, last))
    return out


def check_kernel(name, k, variant, arch, budget, element="fp16", layout="row", reference=None):
    """Returns (results: {check: (ok, detail)}, facts: {...}). reference: (name, kernel) of the
    same policy's addmm_glu kernel, for the gated projection's noy check."""
    code = instructions(k["body"])
    mfma = MFMA_FP8 if layout in FP8 else MFMA[(arch, element)]
    names = {mfma} | MFMA_ALIASES.get(mfma, set())

    def is_mfma(line):
        return bool(line.split()) and line.split()[0] in names

    res = {}
    dma_lines = [l for l in code if DMA.match(l)]
    n_mfma = sum(1 for l in code if is_mfma(l))
    other_mfma = sorted({l.split()[0] for l in code if l.strip().startswith("v_mfma") and not is_mfma(l)})
    res["mfma"] = (n_mfma > 0 and not other_mfma,
                   f"{n_mfma} x {mfma}" + (f"; other MFMAs: {other_mfma}" if other_mfma else ""))
    n_tr = sum(1 for l in code if TR_READ.match(l))
    n_u16 = sum(1 for l in code if U16_READ.match(l))
    if layout in K_MAJOR_B:
        bread_ok = n_tr == 0 and n_u16 == 0
    else:
        bread_ok = n_tr > 0 if arch == "gfx950" else n_u16 > 0
    b_name = (f"W ({layout})" if layout in GATED | FP8_GATED | GROUPED else f"B ({layout})" if layout in FP8 else f"W ({layout[5:]})" if layout in PBACKWARD else f"W_down row-major (P {layout[4:]})"
              if layout in BACKWARD else f"B {layout[5:8]}-major" if layout in XBACKWARD else f"B {layout}-major")
    res["bread"] = (bread_ok, f"{b_name}: {n_tr} ds_read_b64_tr_b16, {n_u16} ds_read_u16*")
    n_f16_cvt = sum(1 for l in code if F16_CVT.match(l))
    n_bf16_cvt = sum(1 for l in code if BF16_CVT.match(l))
    if element == "bf16":
        cvt_ok = n_f16_cvt == 0 and (n_bf16_cvt > 0 or arch != "gfx950")
    else:
        cvt_ok = n_bf16_cvt == 0
    res["cvt"] = (cvt_ok, f"{element}: {n_f16_cvt} fp16 conversions, {n_bf16_cvt} v_cvt_pk_bf16_f32")
    if variant == "v1":
        res["dma"] = (not dma_lines, f"{len(dma_lines)} direct-to-LDS loads (V1 expects none)")
    else:
        res["dma"] = (bool(dma_lines), f"{len(dma_lines)} direct-to-LDS loads")
    if arch == "gfx950" and variant != "v1":
        wide = [l for l in dma_lines if DMA16.match(l)]
        res["dma16"] = (bool(dma_lines) and len(wide) == len(dma_lines),
                        f"{len(wide)} of {len(dma_lines)} direct-to-LDS loads are 16-byte")
    n_prio = sum(1 for l in code if l.strip().startswith("s_setprio"))
    if variant != "v1":
        res["setprio"] = (n_prio > 0, f"{n_prio} s_setprio")

    inner = innermost_mfma_loops(code, is_mfma)
    facts = {"loops": []}
    loop_ok = bool(inner)
    loop_detail = []
    vm_ok = True
    vm_detail = []
    for (label, body, _) in inner:
        counts = [int(m.group(1)) for m in (VMCNT.match(l) for l in body) if m]
        n_dma = sum(1 for l in body if DMA.match(l))
        n_bar = sum(1 for l in body if l.strip().startswith("s_barrier"))
        n_pri = sum(1 for l in body if l.strip().startswith("s_setprio"))
        n_mf = sum(1 for l in body if is_mfma(l))
        n_lane = sum(1 for l in body if re.match(r"^\s*v_(?:read|write)lane_b32\b", l))
        facts["loops"].append({"label": label, "mfma": n_mf, "dma": n_dma,
                               "vmcnt": counts, "barriers": n_bar, "setprio": n_pri, "lane_moves": n_lane})
        loop_detail.append(f"{label}: {n_mf} MFMA, {n_dma} direct-to-LDS, "
                           f"{n_bar} s_barrier, {n_pri} s_setprio, {n_lane} v_readlane/v_writelane, vmcnt {counts}")
        if variant == "v1":
            loop_ok &= n_dma == 0
        else:
            loop_ok &= n_dma > 0 and n_bar > 0 and n_pri > 0 and n_lane == 0
        if variant in ("v3", "v4", "v4-op"):
            vm_ok &= any(c > 0 for c in counts) and 0 not in counts
        elif variant == "v2":
            vm_ok &= bool(counts)
        vm_detail.append(f"vmcnt {counts}")
    res["loop"] = (loop_ok, "; ".join(loop_detail) if loop_detail else "no loop holds an MFMA")
    if variant != "v1":
        res["vmcnt"] = (bool(inner) and vm_ok, "; ".join(vm_detail) if vm_detail else "no MFMA loop")

    if variant == "v4":
        last_loop_end = max((e for (_, _, e) in inner), default=0)
        stores = [i for i, l in enumerate(code) if STORE.match(l)]
        last_store = max(stores, default=len(code) - 1)
        blocks, _ = basic_blocks(code)
        store_blocks = [(b, e) for (b, e) in blocks if any(STORE.match(l) for l in code[b:e + 1])]
        after_loop = range(last_loop_end, last_store + 1)
        fmas = [code[i].strip() for i in range(len(code))
                if FMA.match(code[i]) and not re.search(r"0x[0-9a-fA-F]+", code[i])
                and (i in after_loop or any(b <= i <= e for (b, e) in store_blocks))]
        res["fma"] = (bool(fmas), f"{len(fmas)} f32 fma in the epilogue"
                      + (f" (e.g. {fmas[0]})" if fmas else ""))

    meta = k["meta"]
    amd = k["amdhsa"]
    priv = meta.get("private_segment_fixed_size")
    priv2 = amd.get("amdhsa_private_segment_fixed_size")
    scratch_ins = [l for l in code if SCRATCH.match(l)]
    vspill = meta.get("vgpr_spill_count", "0")
    res["scratch"] = (priv == "0" and priv2 == "0" and not scratch_ins and vspill == "0",
                      f"private segment {priv} (.amdhsa {priv2}), {len(scratch_ins)} scratch "
                      f"instructions, {vspill} VGPR spills")
    lds = meta.get("group_segment_fixed_size")
    res["lds"] = (lds is not None and int(lds) <= budget, f"group segment {lds} of {budget} bytes")
    calls = [l.strip() for l in code if CALL.match(l)]
    res["calls"] = (not calls, f"{len(calls)} calls" + (f" ({calls[0]})" if calls else ""))

    m0_bad = []
    for i, l in enumerate(code):
        if not re.search(r"\bm0\b", l):
            continue
        if re.match(r"^\s*s_mov_b32\s+m0,", l) and i + 1 < len(code) and DMA.match(code[i + 1]):
            continue
        m0_bad.append(l.strip())
    res["m0"] = (not m0_bad, f"{len(m0_bad)} other M0 uses" + (f" ({m0_bad[0]})" if m0_bad else ""))

    loads = register_loads(code)
    if layout in GATED | FP8_GATED:
        streaming = [l for l in loads if STREAMING.search(l)]
        if reference is None:
            res["noy"] = (False, "no addmm_glu kernel of the same policy and element to compare with")
        else:
            ref_name, ref = reference
            n_ref = len(register_loads(instructions(ref["body"])))
            ok = len(loads) < n_ref and (variant == "v1" or not streaming)
            res["noy"] = (ok, f"{len(loads)} register buffer loads ({n_ref} in {ref_name[:60]}...), "
                              f"{len(streaming)} streaming")

    if layout in BACKWARD:
        p_loads = [l for l in loads if LOAD_B64.match(l)]
        stores = [STORE_B64.match(l) for l in code]
        stores = [m.group(1) for m in stores if m]
        resources = sorted(set(stores))
        b16 = [l for l in code if STORE_B16.match(l)]
        res["dgated"] = (bool(p_loads) and len(resources) >= 2 and not b16,
                         f"{len(p_loads)} 8-byte register loads (G, U), {len(stores)} 8-byte stores through "
                         f"{len(resources)} buffer resources (dP, H), {len(b16)} 2-byte stores")
    if layout in XBACKWARD:
        loads64 = [m.group(1) for m in (LOAD_B64.match(l) and LOAD_RSRC.search(l) for l in loads) if m]
        load_resources = sorted(set(loads64))
        stores = [m.group(1) for m in (STORE_B64.match(l) for l in code) if m]
        per_resource = sorted((stores.count(r) for r in set(stores)), reverse=True)
        b16 = [l for l in code if STORE_B16.match(l)]
        ok = (len(load_resources) >= 2 and len(per_resource) == 2 and per_resource[0] == per_resource[1]
              and not b16)
        res["xbackward"] = (ok, f"{len(loads64)} 8-byte register loads (G, Y, bias) through {len(load_resources)} "
                                f"buffer resources, 8-byte stores {per_resource} per buffer resource (dX, dY), "
                                f"{len(b16)} 2-byte stores")
    if layout in XBACKWARD:
        n_atomic = sum(1 for l in code if ATOMIC_ADD_F32.match(l))
        n_global = sum(1 for l in code if GLOBAL_STORE.match(l))
        ok = n_atomic == 0 and (n_global > 0 if layout in XSUM else n_global == 0)
        res["colsum"] = (ok, f"{n_global} global stores (the bias gradient's column partials"
                             f"{'' if layout in XSUM else ': none asked'}), {n_atomic} global_atomic_add_f32")
    n_umax = sum(1 for l in code if ATOMIC_UMAX.match(l))
    res["rowmax"] = (n_umax > 0 if layout in ROWMAX else n_umax == 0,
                     f"{n_umax} global_atomic_umax (a composition's row maxima"
                     f"{'' if layout in ROWMAX else ': none asked'})")
    if layout in PBACKWARD:
        blocks, _ = basic_blocks(code)
        per_block = []  # (stores, 8-byte stores, 8-byte register loads) of each block that stores
        for (b, e) in blocks:
            lines = code[b:e + 1]
            n_store = sum(1 for l in lines if STORE.match(l))
            if n_store:
                n_b64 = sum(1 for l in lines if STORE_B64.match(l))
                n_load = sum(1 for l in register_loads(lines) if LOAD_B64.match(l))
                per_block.append((n_store, n_b64, n_load))
        b16 = [l for l in code if STORE_B16.match(l)]
        ok = (bool(per_block) and not b16
              and all(n == n64 and n64 == 2 * nl and nl > 0 for (n, n64, nl) in per_block))
        res["pbackward"] = (ok, "stores / 8-byte stores / 8-byte register loads per storing block "
                                f"{[list(x) for x in per_block]} (dG, dU per dO vector), {len(b16)} 2-byte stores")
    facts.update({"lds": lds, "vgpr": meta.get("vgpr_count"), "agpr": meta.get("agpr_count"),
                  "sgpr": meta.get("sgpr_count"), "sgpr_spill": meta.get("sgpr_spill_count"),
                  "mfma": n_mfma, "dma": len(dma_lines), "loads": len(loads)})
    return res, facts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--asm", required=True)
    ap.add_argument("--arch", required=True, choices=ARCHS)
    ap.add_argument("--lds-budget", type=int, required=True)
    ap.add_argument("--kernel", action="append", required=True,
                    help="NAME[/ELEMENT/LAYOUT]=VARIANT[/ELEMENT/LAYOUT]")
    ap.add_argument("--expect-fail", choices=CHECKS)
    ap.add_argument("--report")
    args = ap.parse_args()

    kernels = parse(args.asm)
    if not kernels:
        print(f"FAIL: no kernels in {args.asm}")
        return 1
    lines = []
    failed = False
    expected_fail_seen = []
    for spec in args.kernel:
        sub, _, judged = spec.partition("=")
        parts = sub.split("/")
        name_sub = parts[0]
        element, layout = (parts[1], parts[2]) if len(parts) == 3 else ("fp16", "row")
        variant, *as_problem = judged.split("/")
        judge_element, judge_layout = as_problem if len(as_problem) == 2 else (element, layout)
        if variant not in ("v1", "v2", "v3", "v4", "v4-op") or len(parts) not in (1, 3) \
                or len(as_problem) not in (0, 2):
            print(f"FAIL: bad --kernel {spec}")
            return 1
        if {element, judge_element} - set(PROBLEM_ELEMENT) or {layout, judge_layout} - set(PROBLEMS):
            print(f"FAIL: unknown element or layout in --kernel {spec}")
            return 1
        names = kernels_named(kernels, name_sub, element, layout, args.arch)
        if len(names) != 1:
            print(f"FAIL: --kernel {sub} matches {len(names)} kernels: {names}")
            return 1
        name = names[0]
        reference = None
        if judge_layout in GATED | FP8_GATED:  # the same policy's addmm_glu kernel (reads Y), B col_major if present
            for ref_layout in (("fp8-col",) if judge_layout in FP8_GATED else ()) + ("col", "row"):
                refs = kernels_named(kernels, name_sub, element, ref_layout, args.arch)
                if len(refs) == 1:
                    reference = (refs[0], kernels[refs[0]])
                    break
        res, facts = check_kernel(name, kernels[name], variant, args.arch, args.lds_budget,
                                  judge_element, judge_layout, reference)
        lines.append(f"{args.arch} {name_sub} {element}/{layout} ({variant}"
                     + (f", judged as {judge_element}/{judge_layout}" if as_problem else "")
                     + f"): LDS {facts['lds']} B, VGPR {facts['vgpr']}, "
                     f"AGPR {facts['agpr']}, SGPR {facts['sgpr']} (spilled to VGPR lanes: "
                     f"{facts['sgpr_spill']}), {facts['mfma']} MFMA, {facts['dma']} direct-to-LDS, "
                     f"{facts['loads']} register buffer loads")
        for check in CHECKS:
            if check not in res:
                continue
            ok, detail = res[check]
            lines.append(f"  {'ok  ' if ok else 'FAIL'} {check:8s} {detail}")
            if args.expect_fail:
                if check == args.expect_fail:
                    expected_fail_seen.append(not ok)
            elif not ok:
                failed = True
        if args.expect_fail and args.expect_fail not in res:
            lines.append(f"  check {args.expect_fail} does not apply to {variant}")
            expected_fail_seen.append(False)
    out = "\n".join(lines)
    print(out)
    if args.report:
        with open(args.report, "w") as f:
            f.write(out + "\n")
    if args.expect_fail:
        if expected_fail_seen and all(expected_fail_seen):
            print(f"PASS: check '{args.expect_fail}' failed as expected")
            return 0
        print(f"FAIL: check '{args.expect_fail}' was expected to fail but did not")
        return 1
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
