-- Drives Neovim's built-in LSP client against the maskc server for
-- TestNeovim. Environment: MASKC (the maskc binary), MASKC_EDITORS (the
-- editors/ directory), FLEX_FILE (the file to open), OUT_FILE (where the
-- JSON result goes). It records the diagnostics published for the file as
-- opened, a hover on its first attention block, and the diagnostics after
-- an edit that adds a syntax error, then quits.
local out = {}

local function finish()
  local f = assert(io.open(os.getenv("OUT_FILE"), "w"))
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  local maskc = dofile(os.getenv("MASKC_EDITORS") .. "/nvim/maskc.lua")
  maskc.setup({ cmd = { os.getenv("MASKC"), "lsp" } })

  -- Record every publishDiagnostics, then let Neovim handle it as usual.
  local published = {}
  local default = vim.lsp.handlers["textDocument/publishDiagnostics"]
  vim.lsp.handlers["textDocument/publishDiagnostics"] = function(e, result, ctx, config)
    table.insert(published, result)
    return default(e, result, ctx, config)
  end

  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("FLEX_FILE")))
  local bufnr = vim.api.nvim_get_current_buf()
  out.filetype = vim.bo[bufnr].filetype
  if not vim.wait(10000, function() return #published > 0 end, 20) then
    error("no publishDiagnostics within 10 s")
  end
  out.diagnostics = published[1].diagnostics

  -- Hover on the name of the first attention block.
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local line, col
  for i, l in ipairs(lines) do
    local s = l:find("^attention%s+")
    if s then
      line, col = i - 1, #l:match("^attention%s+")
      break
    end
  end
  if not line then
    error("no attention block in the file")
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = line, character = col } }
  -- The picture is drawn off the request path: hover again until the
  -- hover links it instead of saying it is being drawn.
  for _ = 1, 200 do
    local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 10000)
    for _, r in pairs(responses or {}) do
      if r.err then
        error("hover: " .. vim.inspect(r.err))
      end
      out.hover = r.result
    end
    local text = out.hover and out.hover.contents and out.hover.contents.value or ""
    if not text:find("being drawn", 1, true) then
      break
    end
    vim.wait(100)
  end

  -- Type a broken declaration at the end; expect new diagnostics.
  local before = #published
  vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { "mask broken(b, h, q, kv) = q //" })
  if not vim.wait(10000, function() return #published > before end, 20) then
    error("no publishDiagnostics after the edit")
  end
  out.diagnostics_after_edit = published[#published].diagnostics

  for _, client in pairs(vim.lsp.get_active_clients()) do
    client.stop()
  end
  vim.wait(2000, function() return #vim.lsp.get_active_clients() == 0 end, 20)
end)
if not ok then
  out.error = tostring(err)
end
finish()
