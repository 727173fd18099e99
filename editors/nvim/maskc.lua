-- Neovim support for maskc .flex files: filetype detection and the maskc
-- language server (`maskc lsp`). Works with Neovim 0.7 and later, without
-- plugins:
--
--   require("maskc").setup()                      -- maskc on $PATH
--   require("maskc").setup({ cmd = { "/path/to/maskc", "lsp" } })
--
-- `.flex` also names the files of the flex lexer generator, so a buffer
-- gets the `maskc` filetype only when its content looks like maskc: a line
-- starting with a maskc declaration keyword, and no `%%` / `%{` / `%option`
-- line of a lexer specification.
local M = {}

M.config = {
  cmd = { "maskc", "lsp" },
  -- how many leading lines the content check reads
  scan_lines = 200,
}

--- Reports whether the buffer's content is a maskc file rather than a flex
--- lexer specification.
function M.is_maskc(bufnr)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, M.config.scan_lines, false)
  local maskc = false
  for _, line in ipairs(lines) do
    if line:match("^%%") then
      return false -- %%, %{, %option: a lexer specification
    end
    if line:match("^%s*param%s") or line:match("^%s*buffer%s") or line:match("^%s*mask%s")
      or line:match("^%s*score%s") or line:match("^%s*attention%s") or line:match("^def%s") then
      maskc = true
    end
  end
  -- An empty new file is taken as maskc: the lexer's files are rarely new.
  return maskc or (#lines == 1 and lines[1] == "")
end

--- Starts (or reuses) the language server and attaches it to bufnr.
function M.attach(bufnr)
  local root = vim.fn.getcwd()
  if vim.lsp.start then -- Neovim 0.8+
    return vim.lsp.start({ name = "maskc", cmd = M.config.cmd, root_dir = root }, { bufnr = bufnr })
  end
  -- Neovim 0.7: one client for every maskc buffer.
  if not (M.client_id and vim.lsp.get_client_by_id(M.client_id)) then
    M.client_id = vim.lsp.start_client({ name = "maskc", cmd = M.config.cmd, root_dir = root })
  end
  if M.client_id then
    vim.lsp.buf_attach_client(bufnr, M.client_id)
  end
  return M.client_id
end

--- Installs the filetype detection and starts the server for maskc buffers.
function M.setup(opts)
  M.config = vim.tbl_extend("force", M.config, opts or {})
  local group = vim.api.nvim_create_augroup("maskc", { clear = true })
  vim.api.nvim_create_autocmd({ "BufRead", "BufNewFile" }, {
    group = group,
    pattern = "*.flex",
    callback = function(args)
      if M.is_maskc(args.buf) then
        vim.bo[args.buf].filetype = "maskc"
      end
    end,
  })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "maskc",
    callback = function(args)
      vim.bo[args.buf].commentstring = "# %s"
      M.attach(args.buf)
    end,
  })
end

return M
