# FastVideo's Sliding Tile Attention (STA), 3-D, as attention-gym writes it
# (attn_gym/masks/sta.py), pasted: video tokens see the tiles of a 3-D window
# around their own tile, and the text tokens after them; text sees all. At 29
# terms it is past the 24 kv ranges the kernel walks one by one (classify
# --shape warns that its hull visits 5.89x the tiles with a kept pair).
def generate_sta_mask_mod_3d(
    canvas_twh: Tuple[int, int, int],
    kernel_twh: Tuple[int, int, int],
    tile_twh: Tuple[int, int, int],
    text_seq_len: int = 0,
) -> _mask_mod_signature:
    """Generates a 3D STA mask with a given kernel size."""
    canvas_t, canvas_h, canvas_w = canvas_twh
    kernel_t, kernel_h, kernel_w = kernel_twh
    tile_t, tile_h, tile_w = tile_twh
    tile_numel = tile_t * tile_h * tile_w
    assert canvas_t % tile_t == 0, f"Canvas time {canvas_t} is not divisible by tile time {tile_t}"
    assert canvas_h % tile_h == 0, (
        f"Canvas height {canvas_h} is not divisible by tile height {tile_h}"
    )
    assert canvas_w % tile_w == 0, (
        f"Canvas width {canvas_w} is not divisible by tile width {tile_w}"
    )
    assert kernel_t % tile_t == 0, f"Kernel time {kernel_t} is not divisible by tile time {tile_t}"
    assert kernel_h % tile_h == 0, (
        f"Kernel height {kernel_h} is not divisible by tile height {tile_h}"
    )
    assert kernel_w % tile_w == 0, (
        f"Kernel width {kernel_w} is not divisible by tile width {tile_w}"
    )
    canvas_tile_t, canvas_tile_h, canvas_tile_w = (
        canvas_t // tile_t,
        canvas_h // tile_h,
        canvas_w // tile_w,
    )
    kernel_tile_t, kernel_tile_h, kernel_tile_w = (
        kernel_t // tile_t,
        kernel_h // tile_h,
        kernel_w // tile_w,
    )
    vision_seq_len = canvas_t * canvas_h * canvas_w

    def get_t_h_w_idx_tiled(idx: IntTensor) -> Tuple[IntTensor, IntTensor, IntTensor]:
        tile_id = idx // tile_numel
        tile_t_idx = tile_id // (canvas_tile_h * canvas_tile_w)
        tile_h_idx = (tile_id % (canvas_tile_h * canvas_tile_w)) // canvas_tile_w
        tile_w_idx = tile_id % canvas_tile_w
        return tile_t_idx, tile_h_idx, tile_w_idx

    def get_border(kernel_size: IntTensor) -> Tuple[IntTensor, IntTensor]:
        left_border = kernel_size // 2
        right_border = kernel_size // 2 + (kernel_size % 2 - 1)
        return left_border, right_border

    def sta_mask_mod_3d(
        b: IntTensor,
        h: IntTensor,
        q_idx: IntTensor,
        kv_idx: IntTensor,
    ) -> BoolTensor:
        q_tile_t, q_tile_h, q_tile_w = get_t_h_w_idx_tiled(q_idx)
        kv_tile_t, kv_tile_h, kv_tile_w = get_t_h_w_idx_tiled(kv_idx)
        left_border_t, right_border_t = get_border(kernel_tile_t)
        left_border_h, right_border_h = get_border(kernel_tile_h)
        left_border_w, right_border_w = get_border(kernel_tile_w)
        kernel_center_t = q_tile_t.clamp(left_border_t, (canvas_tile_t - 1) - right_border_t)
        kernel_center_h = q_tile_h.clamp(left_border_h, (canvas_tile_h - 1) - right_border_h)
        kernel_center_w = q_tile_w.clamp(left_border_w, (canvas_tile_w - 1) - right_border_w)
        t_mask = (kv_tile_t >= kernel_center_t - left_border_t) & (
            kv_tile_t <= kernel_center_t + right_border_t
        )
        h_mask = (kv_tile_h >= kernel_center_h - left_border_h) & (
            kv_tile_h <= kernel_center_h + right_border_h
        )
        w_mask = (kv_tile_w >= kernel_center_w - left_border_w) & (
            kv_tile_w <= kernel_center_w + right_border_w
        )
        vision_mask = (q_idx < vision_seq_len) & (kv_idx < vision_seq_len)
        vision_to_text_mask = (
            (q_idx < vision_seq_len)
            & (kv_idx >= vision_seq_len)
            & (kv_idx < vision_seq_len + text_seq_len)
        )
        text_to_all_mask = (q_idx >= vision_seq_len) & (kv_idx < vision_seq_len + text_seq_len)
        return (vision_mask & t_mask & w_mask & h_mask) | vision_to_text_mask | text_to_all_mask

    sta_mask_mod_3d.__name__ = f"sta_3d_c{canvas_t}x{canvas_h}x{canvas_w}_k{kernel_t}x{kernel_h}x{kernel_w}_t{tile_t}x{tile_h}x{tile_w}"
    return sta_mask_mod_3d

attention sta_video {
    mask = generate_sta_mask_mod_3d((24, 24, 24), (12, 12, 12), (4, 4, 4), 226)
}

attention sta_small {
    mask = generate_sta_mask_mod_3d((4, 8, 8), (2, 4, 4), (2, 2, 2), 32)
}
