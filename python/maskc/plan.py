"""plan.json (schema: classify/PLAN.md) as Python values, and the dispatch
decision for one call.

A plan says, per attention block, which Primus-Turbo entry computes it exactly
and under which run-time preconditions, or that maskc's generated kernel does.
choose() turns a decision and one call's facts into the kernel that runs:

- "turbo": the plan's Turbo entry, when primus_turbo imports and every
  precondition holds for this call;
- "sdpa": torch's scaled_dot_product_attention (cuDNN first), only where it is
  exact: a full or causal block with no score, sink, ALiBi, softcap or
  dropout, no window, no LSE requested, and for causal Sq == Skv (SDPA's
  is_causal aligns top-left, Turbo's causal bottom-right; they agree only
  when the lengths are equal);
- "generated": maskc's generated kernel, everywhere else.

A failed precondition never silently runs something else: the choice carries
a note saying which precondition failed and that the generated kernel runs
(the caller says it once), and a caller that insists on Turbo or SDPA gets a
MaskcError instead. A Turbo that is merely not installed (every NVIDIA
machine) is no surprise and carries no note.
"""
from .diagnostics import MaskcError

__all__ = ["PLAN_VERSION", "GENERATED_ENTRY", "TURBO_ENTRIES", "Decision", "Plan", "CallFacts", "Choice",
           "precondition_holds", "choose", "BACKENDS"]

#: The plan.json schema version this package reads.
PLAN_VERSION = 2
#: The entry of a block computed by maskc's generated kernel.
GENERATED_ENTRY = "maskc_generated"
#: The Primus-Turbo functions a plan may name.
TURBO_ENTRIES = ("flash_attn_func", "flash_attn_varlen_func", "flash_attn_fp8_func")
#: What a caller may ask for: "auto" (the rules above) or one kernel only.
BACKENDS = ("auto", "turbo", "sdpa", "generated")

# Turbo kwargs under which SDPA computes the same function; any other kwarg
# (alibi_slopes, softcap, sink, dropout_p, cu_seqlens_*) changes the model.
_SDPA_NEUTRAL_KWARGS = {"causal", "window_size", "softmax_scale", "deterministic", "return_lse"}


class Decision:
    """One attention block's entry of plan.json (fields as PLAN.md names them)."""

    def __init__(self, d):
        try:
            self.name = d["name"]
            self.pattern = d["pattern"]
            self.entry = d["entry"]
            self.kwargs = dict(d.get("kwargs") or {})
            self.preconditions = list(d.get("preconditions") or [])
        except (KeyError, TypeError) as e:
            raise MaskcError("plan.json: an attention entry lacks %s" % e)
        self.fallback = d.get("fallback", "")
        self.score = d.get("score", "none")
        self.segments = d.get("segments", "")
        self.reason = d.get("reason", "")
        self.canonical = d.get("canonical", "")
        # The generated kernel's name in manifest.json (plan version 2: plan.json names the kernel's
        # descriptor instead of restating it); kernel is that descriptor, the manifest's kernels[] entry,
        # once Plan has the manifest's (None without one).
        self.kernel_name = d.get("kernel")
        if self.kernel_name is not None and not isinstance(self.kernel_name, str):
            raise MaskcError("plan.json: block %s's kernel is %s, not a manifest kernel's name (a plan of an older "
                             "maskc: compile the file again)" % (self.name, type(self.kernel_name).__name__))
        self.kernel = None
        if self.entry != GENERATED_ENTRY and self.entry not in TURBO_ENTRIES:
            raise MaskcError("plan.json: block %s names entry %r, which this package does not know" %
                             (self.name, self.entry))

    @property
    def is_turbo(self):
        """Whether the plan names a Primus-Turbo entry for this block."""
        return self.entry in TURBO_ENTRIES

    @property
    def has_generated(self):
        """Whether maskc compile wrote a generated kernel for this block
        (its pattern, or its fallback)."""
        return self.kernel_name is not None


class Plan:
    """A parsed plan.json: target profile and decisions by block name.
    kernels: the manifest's kernel descriptors by name (maskc.abi.Manifest.
    descriptors) that the decisions' kernel names resolve to; None when
    there is no manifest beside the plan."""

    def __init__(self, doc, kernels=None):
        if not isinstance(doc, dict):
            raise MaskcError("plan.json is not an object")
        if doc.get("version") != PLAN_VERSION:
            raise MaskcError("plan.json has schema version %r; this package reads version %d (upgrade one of them)" %
                             (doc.get("version"), PLAN_VERSION))
        self.target = doc.get("target", "")
        self.attentions = {}
        for a in doc.get("attentions") or []:
            dec = Decision(a)
            if dec.kernel_name is not None and kernels is not None:
                if dec.kernel_name not in kernels:
                    raise MaskcError("plan.json: block %s names kernel %r, which manifest.json does not describe "
                                     "(it has: %s)" % (dec.name, dec.kernel_name, ", ".join(sorted(kernels)) or "none"))
                dec.kernel = kernels[dec.kernel_name]
            self.attentions[dec.name] = dec

    def attention(self, name):
        """The decision for block name; MaskcError naming the blocks there are."""
        if name not in self.attentions:
            raise MaskcError("no attention block %r; the file declares: %s" %
                             (name, ", ".join(sorted(self.attentions)) or "none"))
        return self.attentions[name]


class CallFacts:
    """What dispatch needs to know about one call: the sizes, whether the
    LSE is wanted, the platform ("cuda" or "hip") and whether primus_turbo
    imports."""

    def __init__(self, sq, skv, return_lse=False, platform="cuda", turbo_available=False):
        self.sq, self.skv = int(sq), int(skv)
        self.return_lse = bool(return_lse)
        self.platform = platform
        self.turbo_available = bool(turbo_available)


def precondition_holds(cond, facts):
    """(holds, why) for one precondition string of a plan on this call. A
    precondition this package does not know never holds: exact or refused."""
    if cond.replace(" ", "") == "sq==skv":
        if facts.sq == facts.skv:
            return True, ""
        return False, "Sq=%d != Skv=%d" % (facts.sq, facts.skv)
    return False, "precondition %r is unknown to this version of the package" % cond


class Choice:
    """The kernel that runs one call: kind ("turbo", "sdpa", "generated"),
    the SDPA arguments (is_causal, scale) for "sdpa", and note: the failed
    precondition that sent a Turbo-planned block to the generated kernel,
    or "" (the caller reports it once)."""

    def __init__(self, kind, note="", is_causal=False, scale=None):
        self.kind, self.note, self.is_causal, self.scale = kind, note, is_causal, scale

    def __repr__(self):
        return "Choice(%r, note=%r)" % (self.kind, self.note)


def _sdpa_exact(dec, facts):
    """("", is_causal) when SDPA computes this call exactly, else (why not, False)."""
    if dec.entry != "flash_attn_func" or dec.pattern not in ("full", "causal"):
        return "block %s is %s, not full or causal attention" % (dec.name, dec.pattern), False
    if dec.score != "none":
        return "block %s has a score (%s)" % (dec.name, dec.score), False
    extra = sorted(set(dec.kwargs) - _SDPA_NEUTRAL_KWARGS)
    if extra:
        return "block %s passes %s, which SDPA has no exact form of" % (dec.name, ", ".join(extra)), False
    if list(dec.kwargs.get("window_size", [-1, -1])) != [-1, -1]:
        return "block %s has a window" % dec.name, False
    if facts.return_lse:
        return "the LSE is requested and SDPA does not return it", False
    causal = bool(dec.kwargs.get("causal", False))
    if causal != (dec.pattern == "causal"):
        return "block %s: plan pattern and causal flag disagree" % dec.name, False
    if causal and facts.sq != facts.skv:
        return ("Sq=%d != Skv=%d: SDPA's is_causal aligns top-left, the plan's causal bottom-right" %
                (facts.sq, facts.skv)), False
    return "", causal


def choose(dec, facts, backend="auto"):
    """The Choice for decision dec on a call with facts; backend restricts
    it to one kernel ("turbo", "sdpa", "generated") and raises MaskcError
    when that kernel is not exact or not available for this call."""
    if backend not in BACKENDS:
        raise MaskcError("backend=%r: want one of %s" % (backend, ", ".join(BACKENDS)))
    notes = []
    failed = []  # plain loops: torch.compile traces this function
    for cond in dec.preconditions:
        ok, why = precondition_holds(cond, facts)
        if not ok:
            failed.append(why)
    if backend in ("auto", "turbo") and dec.is_turbo:
        if not facts.turbo_available:
            notes.append("primus_turbo is not importable")
        elif facts.return_lse:
            notes.append("the LSE is requested, and the plan does not fix the layout of Turbo's")
        elif failed:
            notes.append("the plan's %s needs %s: %s" % (dec.entry, " and ".join(dec.preconditions), "; ".join(failed)))
        else:
            return Choice("turbo")
    elif backend == "turbo":
        notes.append("the plan for block %s is generated (%s)" % (dec.name, dec.reason))
    if backend == "turbo":
        raise MaskcError("block %s: backend='turbo' asked for, but %s" % (dec.name, "; ".join(notes)))
    scale = dec.kwargs.get("softmax_scale")
    if backend in ("auto", "sdpa") and facts.platform == "cuda" and not failed:
        why, causal = _sdpa_exact(dec, facts)
        if not why:
            return Choice("sdpa", is_causal=causal, scale=scale)
        notes.append("SDPA is not exact: " + why)
    elif backend == "sdpa":
        notes.append("the plan's preconditions fail (%s)" % "; ".join(failed) if failed else
                     "SDPA runs on CUDA only")
    if backend == "sdpa":
        raise MaskcError("block %s: backend='sdpa' asked for, but %s" % (dec.name, "; ".join(notes)))
    if not dec.has_generated:
        raise MaskcError("block %s: no kernel can run this call exactly: %s; and maskc compile wrote no generated "
                         "kernel for it" % (dec.name, "; ".join(notes) or "the generated kernel was requested"))
    note = ""
    if dec.is_turbo and failed:
        note = "block %s runs maskc's generated kernel: the plan's %s needs %s, and %s" % (
            dec.name, dec.entry, " and ".join(dec.preconditions), "; ".join(failed))
    return Choice("generated", note)
