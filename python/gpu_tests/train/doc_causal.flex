# Packed documents for the Hugging Face training check (train_hf.py): each
# token attends causally within its own document.

buffer doc: i32[KV] segments  # document id of each token, non-decreasing

mask causal(b, h, q, kv) = q >= kv
mask same_doc(b, h, q, kv) = doc[q] == doc[kv]

attention doc_layer {
    mask = and_masks(causal, same_doc)
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
