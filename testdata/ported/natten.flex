# attention-gym: 2-D neighborhood attention (NATTEN) on a row-major canvas,
# with the window clamped to stay inside the canvas.
def generate_natten(canvas_w: int, canvas_h: int, kernel_w: int, kernel_h: int):
    def natten_mask_mod(b, h, q_idx, kv_idx):
        q_x = q_idx // canvas_w
        q_y = q_idx % canvas_w
        kv_x = kv_idx // canvas_w
        kv_y = kv_idx % canvas_w
        kernel_center_x = q_x.clamp(kernel_w // 2, (canvas_w - 1) - kernel_w // 2)
        kernel_center_y = q_y.clamp(kernel_h // 2, (canvas_h - 1) - kernel_h // 2)
        hori_mask = (kernel_center_x - kv_x).abs() <= kernel_w // 2
        vert_mask = (kernel_center_y - kv_y).abs() <= kernel_h // 2
        return hori_mask & vert_mask
    return natten_mask_mod

attention natten {
    mask = generate_natten(16, 20, 5, 7)
}
