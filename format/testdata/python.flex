# Python that real FlexAttention code carries (issue 28): fmt keeps it.
SLIDING_WINDOW  =   1024   # a Python module constant, printed without `param`

buffer document_id: i32[KV]

@lru_cache
def causal(
    b,
    h,
    q_idx,
    kv_idx,
):
    return q_idx >= kv_idx

def generate_doc_mask_mod(document_id, offset: int = 0, pair: tuple[int, int] = (1, 2)):
    """Documents."""
    def doc_mask_mod(b, h, q_idx, kv_idx):
        same = document_id[q_idx] == document_id[kv_idx]
        "a string statement"
        return same
    doc_mask_mod.__name__ = f"doc_{offset}"
    return doc_mask_mod

attention a {
    mask = and_masks(causal, generate_doc_mask_mod(document_id))
}

def generate_sliding_window(window_size: int):
    def sliding_window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= window_size

    sliding_window_mask = and_masks(sliding_window, causal)
    sliding_window_mask.__name__ = f"sliding_window_{window_size}"
    return sliding_window_mask

def generate_prefix_lm_mask(prefix_length):
    def prefix_mask(b, h, q_idx, kv_idx):
        return kv_idx < prefix_length
    return or_masks(prefix_mask, causal)

# A def with if/else is printed as written, its comments included.
def generate_window(window=None,   causal: bool = True):
    def window_mask(b, h, q_idx, kv_idx):
        if window is None:  # no window: causal
            return causal(b, h, q_idx, kv_idx)
        # a band
        m = q_idx - kv_idx <= window
        if causal:
            m = m & (q_idx >= kv_idx)
        return m
    return window_mask

def generate_half_window(window: int = 128):
    half   = window // 2
    def half_window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= half
    return half_window

# parameters taken only by name, after a bare *
def causal_mask_mod(b, h, q_idx, kv_idx, *,context_len):
    return (q_idx + context_len) >= kv_idx

# a mod bound to a name as a lambda
near=lambda b,h,q_idx,kv_idx:q_idx-kv_idx<8
